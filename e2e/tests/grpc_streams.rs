//! A server-streaming gRPC call resumed from a checkpoint (`reattempt::tonic::resume_streaming`)
//! through a tonic client over the gRPC layer (gRFC A6's service config), against the scripted
//! `numbers.v1.Numbers` server on 127.0.0.1 (`reattempt_e2e::numbers`): streams reset, ended
//! with a status, cut off with their connection, stalled, and the whole server killed and
//! started again on its port. The server counts what it sent, so that "each number once and in
//! order" is checked on both sides. Real clock and sockets: each test takes well under a second.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reattempt::tonic::{GrpcRetryLayer, GrpcRetryService, ServiceConfig, StreamStatuses};
use reattempt::{RetryBudget, RetryPolicy};
use reattempt_e2e::numbers::pb::numbers_client::NumbersClient;
use reattempt_e2e::numbers::pb::{CountRequest, Number};
use reattempt_e2e::numbers::server::{End, Fate, Script, Seen, TestServer};
use tonic::codegen::tokio_stream::{Stream, StreamExt};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use tower::Layer;

const COUNT: &str = "/numbers.v1.Numbers/Count";

type Client = NumbersClient<GrpcRetryService<Channel>>;

/// The gRPC layer as a service config sets it up: a refused connection or an UNAVAILABLE
/// before the first message is retried (up to 4 attempts), and the call is committed at its
/// response headers (A6).
fn layer() -> GrpcRetryLayer {
    let config = ServiceConfig::from_json(
        r#"{"methodConfig": [{
          "name": [{ "service": "numbers.v1.Numbers" }],
          "retryPolicy": { "maxAttempts": 4, "initialBackoff": "0.02s", "maxBackoff": "0.1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] }
        }]}"#,
    )
    .unwrap();
    GrpcRetryLayer::from_service_config(config)
}

fn client(addr: SocketAddr, layer: &GrpcRetryLayer) -> Client {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_millis(250))
        .connect_lazy();
    NumbersClient::new(layer.layer(channel))
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Short delays, and enough attempts for the tests' outages.
fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(Duration::from_millis(10))
        .max_delay(Duration::from_millis(100))
        .build()
        .unwrap()
}

/// The numbers a stream gives up to its end, and the status it ended with, if any.
async fn drain<St>(mut numbers: St) -> (Vec<u64>, Option<Status>)
where
    St: Stream<Item = Result<Number, Status>> + Unpin,
{
    let mut seqs = Vec::new();
    while let Some(item) = numbers.next().await {
        match item {
            Ok(number) => seqs.push(number.seq),
            Err(status) => {
                assert!(numbers.next().await.is_none(), "an error is the last item");
                return (seqs, Some(status));
            }
        }
    }
    (seqs, None)
}

fn afters(seen: &Seen) -> Vec<u64> {
    seen.opened.iter().map(|request| request.after).collect()
}

/// Resumes `Count` up to `until` through `client`, by the codes the layer retries for it.
macro_rules! numbers {
    ($policy:expr, $client:expr, $layer:expr, $until:expr) => {{
        let client = $client.clone();
        reattempt::tonic::resume_streaming(
            $policy,
            move |after: u64| {
                let mut client = client.clone();
                async move {
                    client
                        .count(CountRequest {
                            after,
                            until: $until,
                        })
                        .await
                }
            },
            0,
            |after, number: &Number| *after = number.seq,
        )
        .hooks(StreamStatuses::of_method($layer, COUNT))
    }};
}

#[tokio::test]
async fn a_stream_killed_three_times_delivers_every_number_once_and_in_order() {
    let script = Script::new([
        Fate::new(10, End::Reset(h2::Reason::INTERNAL_ERROR)),
        Fate::new(7, End::DropConnection),
        Fate::new(12, End::Fail(Status::unavailable("draining"))),
    ]);
    let server = TestServer::start(any_port(), &script);
    let layer = layer();
    let client = client(server.addr(), &layer);
    let policy = policy(3);

    let numbers = numbers!(&policy, client, &layer, 50);
    let (seqs, end) = drain(numbers).await;

    assert_eq!(seqs, (1..=50).collect::<Vec<_>>());
    assert!(end.is_none(), "{end:?}");
    let seen = script.seen();
    assert_eq!(
        afters(&seen),
        [0, 10, 17, 29],
        "each resume asks from the last number"
    );
    assert_eq!(
        seen.sent,
        (1..=50).collect::<Vec<_>>(),
        "nothing sent twice"
    );
    assert_eq!(seen.resent(), 0);
    assert_eq!((seen.ended_as_scripted, seen.finished), (3, 1));
}

#[tokio::test]
async fn a_mid_stream_unavailable_is_resumed_and_invalid_argument_is_the_last_item() {
    let script = Script::new([
        Fate::new(5, End::Fail(Status::unavailable("draining"))),
        Fate::new(
            3,
            End::Fail(Status::invalid_argument("until is past the end")),
        ),
    ]);
    let server = TestServer::start(any_port(), &script);
    let layer = layer();
    let client = client(server.addr(), &layer);
    let policy = policy(3);

    let mut numbers = numbers!(&policy, client, &layer, 20);
    let mut seqs = Vec::new();
    let mut end = None;
    while let Some(item) = numbers.next().await {
        match item {
            Ok(number) => seqs.push(number.seq),
            Err(status) => end = Some(status),
        }
    }

    assert_eq!(seqs, (1..=8).collect::<Vec<_>>());
    let status = end.expect("the server's INVALID_ARGUMENT");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(status.message(), "until is past the end");
    assert_eq!(numbers.resumes(), 1);
    assert_eq!(
        afters(&script.seen()),
        [0, 5],
        "not re-opened after INVALID_ARGUMENT"
    );
}

#[tokio::test]
async fn the_crates_classification_resumes_the_same_failures() {
    // No layer's codes: the crate's classification of `Status`, over a plain channel.
    let script = Script::new([
        Fate::new(4, End::Reset(h2::Reason::INTERNAL_ERROR)),
        Fate::new(4, End::DropConnection),
        Fate::new(4, End::Fail(Status::unavailable("draining"))),
        Fate::new(4, End::Fail(Status::internal("bug"))),
    ]);
    let server = TestServer::start(any_port(), &script);
    let policy = policy(3);
    let client = NumbersClient::new(Endpoint::from_shared(server.uri()).unwrap().connect_lazy());

    let numbers = reattempt::tonic::resume_streaming(
        &policy,
        move |after: u64| {
            let mut client = client.clone();
            async move { client.count(CountRequest { after, until: 30 }).await }
        },
        0,
        |after, number: &Number| *after = number.seq,
    );
    let (seqs, end) = drain(numbers).await;

    assert_eq!(seqs, (1..=16).collect::<Vec<_>>());
    let status = end.expect("the server's INTERNAL");
    assert_eq!((status.code(), status.message()), (Code::Internal, "bug"));
    assert_eq!(afters(&script.seen()), [0, 4, 8, 12]);
}

#[tokio::test]
async fn a_trailing_pushback_is_the_least_delay_before_the_resume() {
    let mut draining = Status::unavailable("draining");
    draining
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", "300".parse().unwrap());
    let script = Script::new([Fate::new(2, End::Fail(draining))]);
    let server = TestServer::start(any_port(), &script);
    let layer = layer();
    let client = client(server.addr(), &layer);
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(1))
        .max_delay(Duration::from_secs(1))
        .build()
        .unwrap();

    let mut numbers = numbers!(&policy, client, &layer, 4);
    assert_eq!(numbers.next().await.unwrap().unwrap().seq, 1);
    assert_eq!(numbers.next().await.unwrap().unwrap().seq, 2);
    let start = Instant::now();
    assert_eq!(numbers.next().await.unwrap().unwrap().seq, 3);
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "resumed after {:?}",
        start.elapsed()
    );
    assert_eq!(numbers.next().await.unwrap().unwrap().seq, 4);
    assert!(numbers.next().await.is_none());
}

#[tokio::test]
async fn a_stall_is_resumed_after_the_idle_timeout_and_its_stream_cancelled() {
    let script = Script::new([Fate::new(4, End::Stall)]);
    let server = TestServer::start(any_port(), &script);
    let layer = layer();
    let client = client(server.addr(), &layer);
    let policy = policy(3);

    let start = Instant::now();
    let numbers = numbers!(&policy, client, &layer, 10).idle_timeout(Duration::from_millis(200));
    let (seqs, end) = drain(numbers).await;

    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    assert!(end.is_none(), "{end:?}");
    assert!(
        start.elapsed() >= Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    let seen = script.wait_until(|seen| seen.cancelled == 1).await;
    assert_eq!(afters(&seen), [0, 4]);
    assert_eq!(seen.resent(), 0);
}

#[tokio::test]
async fn a_stall_that_is_not_resumed_ends_with_deadline_exceeded() {
    let script = Script::new([Fate::new(2, End::Stall)]);
    let server = TestServer::start(any_port(), &script);
    let policy = policy(3);
    let client = NumbersClient::new(Endpoint::from_shared(server.uri()).unwrap().connect_lazy());

    // Resumes after ABORTED only: a stall (read as UNAVAILABLE) is not.
    let numbers = reattempt::tonic::resume_streaming(
        &policy,
        move |after: u64| {
            let mut client = client.clone();
            async move { client.count(CountRequest { after, until: 10 }).await }
        },
        0,
        |after, number: &Number| *after = number.seq,
    )
    .hooks(StreamStatuses::codes(&[Code::Aborted]))
    .idle_timeout(Duration::from_millis(100));
    let (seqs, end) = drain(numbers).await;

    assert_eq!(seqs, [1, 2]);
    let status = end.expect("the stall");
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert!(
        std::error::Error::source(&status)
            .unwrap()
            .is::<reattempt::Elapsed>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_stream_and_started_again_on_its_port() {
    let script = Script::new([Fate::new(6, End::KillServer)]);
    let server = TestServer::start(any_port(), &script);
    let addr = server.addr();
    let layer = layer();
    let client = client(addr, &layer);
    // The outage lasts ~200 ms: each open is up to 4 attempts of the layer (refused
    // connections), and the stream re-opens for as long as its schedule allows.
    let policy = RetryPolicy::builder()
        .max_attempts(10)
        .delay(Duration::from_millis(50))
        .max_delay(Duration::from_millis(100))
        .build()
        .unwrap();

    let consume = async {
        let numbers = numbers!(&policy, client, &layer, 20);
        drain(numbers).await
    };
    let restart = async {
        script.wait_until(|seen| seen.kills == 1).await;
        server.kill();
        tokio::time::sleep(Duration::from_millis(200)).await;
        TestServer::start(addr, &script)
    };
    let ((seqs, end), _restarted) = tokio::join!(consume, restart);

    assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
    assert!(end.is_none(), "{end:?}");
    let seen = script.seen();
    assert_eq!(
        afters(&seen),
        [0, 6],
        "the resume reached the new server from 6"
    );
    assert_eq!(seen.resent(), 0);
}

#[tokio::test]
async fn a_budget_pays_for_resumes_across_the_stream() {
    // Three failures after progress (each resume paid back by the next attempt's first
    // number), then opens that fail at once: the budget (10 tokens, 5 a resume) pays for the
    // two resumes that no number pays back, and no third.
    let draining = || End::Fail(Status::unavailable("draining"));
    let script = Script::new([
        Fate::new(3, draining()),
        Fate::new(3, draining()),
        Fate::new(3, draining()),
        Fate::new(0, draining()),
        Fate::new(0, draining()),
        Fate::new(0, draining()),
    ]);
    let server = TestServer::start(any_port(), &script);
    let layer = layer();
    let client = client(server.addr(), &layer);
    let policy = policy(10);
    let budget = RetryBudget::builder()
        .max_tokens(10)
        .retry_cost(5)
        .timeout_cost(5)
        .success_deposit(1)
        .build()
        .unwrap();

    let numbers = numbers!(&policy, client, &layer, 30).budget(&budget);
    let (seqs, end) = drain(numbers).await;

    assert_eq!(seqs, (1..=9).collect::<Vec<_>>());
    let status = end.expect("the budget ran out");
    assert_eq!(
        (status.code(), status.message()),
        (Code::Unavailable, "draining")
    );
    assert_eq!(
        afters(&script.seen()),
        [0, 3, 6, 9, 9],
        "no third resume from 9"
    );
    assert_eq!(budget.available(), 0);
}

#[tokio::test]
async fn dropping_the_consumers_stream_cancels_the_servers_stream() {
    let script = Script::paced([], Duration::from_millis(5));
    let server = TestServer::start(any_port(), &script);
    let layer = layer();
    let client = client(server.addr(), &layer);
    let policy = policy(3);

    let mut numbers = numbers!(&policy, client, &layer, 1_000);
    for seq in 1..=3 {
        assert_eq!(numbers.next().await.unwrap().unwrap().seq, seq);
    }
    drop(numbers);

    let seen = script.wait_until(|seen| seen.cancelled == 1).await;
    assert_eq!(afters(&seen), [0]);
    assert_eq!(seen.finished, 0);
    assert!(seen.sent.len() < 100, "stopped early: {}", seen.sent.len());
}

/// A stream the server resets after 3 numbers with `reason`, under a layer that retries
/// `UNAVAILABLE` only: the numbers delivered, the stream's last status, the opens' checkpoints.
async fn reset_with(reason: h2::Reason) -> (Vec<u64>, Option<tonic::Status>, Vec<u64>) {
    let config = ServiceConfig::from_json(
        r#"{"methodConfig": [{
          "name": [{ "service": "numbers.v1.Numbers" }],
          "retryPolicy": { "maxAttempts": 4, "initialBackoff": "0.02s", "maxBackoff": "0.1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] }
        }]}"#,
    )
    .unwrap();
    let layer = GrpcRetryLayer::from_service_config(config);
    let script = Script::new([Fate::new(3, End::Reset(reason))]);
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = TestServer::start(addr, &script);
    let channel = Endpoint::from_shared(server.uri()).unwrap().connect_lazy();
    let client = NumbersClient::new(layer.layer(channel));
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .build()
        .unwrap();
    let mut numbers = reattempt::tonic::resume_streaming(
        &policy,
        move |after: u64| {
            let mut client = client.clone();
            async move { client.count(CountRequest { after, until: 6 }).await }
        },
        0,
        |after, n: &Number| *after = n.seq,
    )
    .hooks(StreamStatuses::of_method(
        &layer,
        "/numbers.v1.Numbers/Count",
    ));
    let (mut seqs, mut end) = (Vec::new(), None);
    while let Some(item) = numbers.next().await {
        match item {
            Ok(n) => seqs.push(n.seq),
            Err(s) => end = Some(s),
        }
    }
    let opened = script.seen().opened.iter().map(|r| r.after).collect();
    (seqs, end, opened)
}

/// gRPC's HTTP/2 mapping: a reset with `ENHANCE_YOUR_CALM` is the server's `RESOURCE_EXHAUSTED`,
/// and `INADEQUATE_SECURITY` its `PERMISSION_DENIED`, not a broken stream: judged by their codes,
/// which a layer retrying only `UNAVAILABLE` does not resume.
#[tokio::test]
async fn a_reset_that_is_the_servers_word_is_judged_by_its_code() {
    for (reason, code) in [
        (h2::Reason::ENHANCE_YOUR_CALM, Code::ResourceExhausted),
        (h2::Reason::INADEQUATE_SECURITY, Code::PermissionDenied),
    ] {
        let (seqs, end, opened) = reset_with(reason).await;
        assert_eq!(seqs, [1, 2, 3], "{reason:?}");
        assert_eq!(end.map(|s| s.code()), Some(code), "{reason:?}");
        assert_eq!(opened, [0], "{reason:?}: not re-opened");
    }
}

/// A resumed stream over the layer, consumed in a spawned task (Send + 'static), with hedging
/// configured for the method.
#[tokio::test]
async fn a_resumed_stream_over_a_hedging_layer_is_spawnable() {
    let config = ServiceConfig::from_json(
        r#"{"methodConfig": [{
          "name": [{ "service": "numbers.v1.Numbers" }],
          "hedgingPolicy": { "maxAttempts": 3, "hedgingDelay": "0.2s",
            "nonFatalStatusCodes": ["UNAVAILABLE"] }
        }]}"#,
    )
    .unwrap();
    let layer = GrpcRetryLayer::from_service_config(config);
    let script = Script::new([Fate::new(
        3,
        End::Fail(tonic::Status::unavailable("draining")),
    )]);
    let server = TestServer::start("127.0.0.1:0".parse().unwrap(), &script);
    let channel = Endpoint::from_shared(server.uri()).unwrap().connect_lazy();
    let client = NumbersClient::new(layer.layer(channel));
    let statuses = StreamStatuses::of_method(&layer, "/numbers.v1.Numbers/Count");
    let policy: &'static RetryPolicy = Box::leak(Box::new(
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(Duration::from_millis(10))
            .build()
            .unwrap(),
    ));
    let task = tokio::spawn(async move {
        let mut numbers = reattempt::tonic::resume_streaming(
            policy,
            move |after: u64| {
                let mut client = client.clone();
                async move { client.count(CountRequest { after, until: 6 }).await }
            },
            0,
            |after, n: &Number| *after = n.seq,
        )
        .hooks(statuses);
        let mut seqs = Vec::new();
        while let Some(item) = numbers.next().await {
            seqs.push(item.map(|n| n.seq).map_err(|s| s.code()));
        }
        seqs
    });
    let seqs = task.await.unwrap();
    let seen = script.seen();
    assert_eq!(seqs, (1..=6).map(Ok).collect::<Vec<_>>());
    assert_eq!(seen.resent(), 0);
}
