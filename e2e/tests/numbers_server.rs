//! The scripted `Numbers` server of the stream tests (`reattempt_e2e::numbers`), called with a
//! plain tonic client (no retries): each scripted end reaches the client as it says, after
//! exactly the messages scripted, and the server counts what it sent and what was cancelled.
//! Real clock and sockets on 127.0.0.1.

use std::error::Error as _;
use std::net::SocketAddr;
use std::time::Duration;

use reattempt_e2e::numbers::pb::CountRequest;
use reattempt_e2e::numbers::pb::numbers_client::NumbersClient;
use reattempt_e2e::numbers::server::{End, Fate, Script, TestServer};
use tonic::codec::Streaming;
use tonic::transport::Channel;
use tonic::{Code, Status};

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn client(server: &TestServer) -> NumbersClient<Channel> {
    NumbersClient::connect(server.uri()).await.unwrap()
}

async fn count(
    client: &mut NumbersClient<Channel>,
    after: u64,
    until: u64,
) -> Streaming<reattempt_e2e::numbers::pb::Number> {
    client
        .count(CountRequest { after, until })
        .await
        .unwrap()
        .into_inner()
}

/// Reads the stream to its end: the numbers, then its error if it failed.
async fn drain(
    stream: &mut Streaming<reattempt_e2e::numbers::pb::Number>,
) -> (Vec<u64>, Option<Status>) {
    let mut seqs = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(number)) => seqs.push(number.seq),
            Ok(None) => return (seqs, None),
            Err(status) => return (seqs, Some(status)),
        }
    }
}

/// The h2 reason of the reset among the status's sources.
fn reset_reason(status: &Status) -> Option<h2::Reason> {
    let mut source = status.source();
    while let Some(error) = source {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            return h2.reason();
        }
        source = error.source();
    }
    None
}

#[tokio::test]
async fn without_a_fate_a_call_sends_every_number_after_its_checkpoint() {
    let script = Script::new([]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(&server).await;

    let (seqs, end) = drain(&mut count(&mut client, 0, 10).await).await;
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    assert!(end.is_none());
    let (seqs, end) = drain(&mut count(&mut client, 7, 9).await).await;
    assert_eq!(seqs, [8, 9]);
    assert!(end.is_none());

    let seen = script.seen();
    assert_eq!(seen.opened.len(), 2);
    assert_eq!(seen.opened[1], CountRequest { after: 7, until: 9 });
    assert_eq!(seen.finished, 2);
    assert_eq!(seen.resent(), 2, "8 and 9 went twice");
}

#[tokio::test]
async fn a_reset_stream_is_a_transport_error_after_exactly_its_messages() {
    let script = Script::new([
        Fate::new(3, End::Reset(h2::Reason::INTERNAL_ERROR)),
        Fate::new(2, End::Reset(h2::Reason::CANCEL)),
    ]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(&server).await;

    let (seqs, end) = drain(&mut count(&mut client, 0, 100).await).await;
    assert_eq!(seqs, [1, 2, 3]);
    let status = end.expect("reset");
    assert_eq!(status.code(), Code::Internal, "{status:?}");
    assert_eq!(reset_reason(&status), Some(h2::Reason::INTERNAL_ERROR));

    let (seqs, end) = drain(&mut count(&mut client, 3, 100).await).await;
    assert_eq!(seqs, [4, 5]);
    let status = end.expect("reset");
    assert_eq!(status.code(), Code::Cancelled, "{status:?}");
    assert_eq!(reset_reason(&status), Some(h2::Reason::CANCEL));

    let seen = script.seen();
    assert_eq!(seen.sent, [1, 2, 3, 4, 5]);
    assert_eq!((seen.ended_as_scripted, seen.cancelled), (2, 0));
}

#[tokio::test]
async fn a_status_ends_the_stream_with_its_metadata() {
    let mut draining = Status::unavailable("draining");
    draining
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", "250".parse().unwrap());
    let script = Script::new([Fate::new(4, End::Fail(draining))]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(&server).await;

    let (seqs, end) = drain(&mut count(&mut client, 0, 100).await).await;
    assert_eq!(seqs, [1, 2, 3, 4]);
    let status = end.expect("the scripted status");
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(status.message(), "draining");
    assert_eq!(
        status.metadata().get("grpc-retry-pushback-ms").unwrap(),
        "250"
    );
    assert!(
        status.source().is_none(),
        "it came from the server's application"
    );
}

#[tokio::test]
async fn a_dropped_connection_fails_the_stream_and_the_server_keeps_serving() {
    let script = Script::new([Fate::new(2, End::DropConnection)]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(&server).await;

    let (seqs, end) = drain(&mut count(&mut client, 0, 100).await).await;
    assert_eq!(seqs, [1, 2]);
    let status = end.expect("a transport error");
    assert!(status.source().is_some(), "made on the client: {status:?}");

    // The channel connects again.
    let (seqs, end) = drain(&mut count(&mut client, 2, 5).await).await;
    assert_eq!(seqs, [3, 4, 5]);
    assert!(end.is_none());
}

#[tokio::test]
async fn a_stall_sends_nothing_more_and_its_drop_is_a_cancellation() {
    let script = Script::new([Fate::new(2, End::Stall)]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(&server).await;

    let mut stream = count(&mut client, 0, 100).await;
    assert_eq!(stream.message().await.unwrap().unwrap().seq, 1);
    assert_eq!(stream.message().await.unwrap().unwrap().seq, 2);
    let next = tokio::time::timeout(Duration::from_millis(300), stream.message()).await;
    assert!(next.is_err(), "stalled: {next:?}");
    assert_eq!(script.seen().cancelled, 0);

    drop(stream);
    let seen = script.wait_until(|seen| seen.cancelled == 1).await;
    assert_eq!(seen.sent, [1, 2]);
}

#[tokio::test]
async fn a_killed_server_fails_the_stream_and_starts_again_on_its_port() {
    let script = Script::new([Fate::new(4, End::KillServer)]);
    let server = TestServer::start(any_port(), &script);
    let addr = server.addr();
    let mut client = client(&server).await;

    let (seqs, end) = drain(&mut count(&mut client, 0, 100).await).await;
    assert_eq!(seqs, [1, 2, 3, 4]);
    let status = end.expect("a transport error");
    assert!(status.source().is_some(), "made on the client: {status:?}");
    server.kill();
    let refused = client.count(CountRequest { after: 4, until: 6 }).await;
    assert_eq!(refused.unwrap_err().code(), Code::Unavailable);

    let _server = TestServer::start(addr, &script);
    let (seqs, end) = drain(&mut count(&mut client, 4, 6).await).await;
    assert_eq!(seqs, [5, 6]);
    assert!(end.is_none());
    let seen = script.seen();
    assert_eq!((seen.kills, seen.finished, seen.resent()), (1, 1, 0));
}

#[tokio::test]
async fn a_dropped_stream_is_cancelled_on_the_server() {
    let script = Script::paced([], Duration::from_millis(5));
    let server = TestServer::start(any_port(), &script);
    let mut client = client(&server).await;

    let mut stream = count(&mut client, 0, 1_000).await;
    assert_eq!(stream.message().await.unwrap().unwrap().seq, 1);
    assert_eq!(stream.message().await.unwrap().unwrap().seq, 2);
    drop(stream);

    let seen = script.wait_until(|seen| seen.cancelled == 1).await;
    assert_eq!(seen.finished, 0);
    assert!(seen.sent.len() < 100, "stopped early: {}", seen.sent.len());
}
