//! The gRPC layer (`reattempt::tonic::GrpcRetryLayer`) end to end: a tonic-health server on
//! 127.0.0.1 answering from a script, and a `HealthClient` over a `Channel` wrapped in the
//! layer, as a user writes it. Real sockets and a real clock; each test takes well under a
//! second. The cases of gRFC A6 that grpc-go's own suite checks are ported below, each citing
//! its source.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reattempt::tonic::{
    GrpcRetryLayer, GrpcRetryPolicy, HedgingPolicy, RetryThrottle, ServiceConfig,
};
use tokio::time::Instant;
use tonic::codegen::tokio_stream::{self, Stream};
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_layer::Layer;

// ---------------------------------------------------------------------------------------------
// The scripted server.

/// What the server saw of one call.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    previous_attempts: Option<String>,
    timeout: Option<String>,
    service_len: usize,
}

/// The server's answer to call `i` (0-based), from the script.
type Answer = Box<dyn Fn(usize) -> Reply + Send + Sync>;

enum Reply {
    Serving,
    Fail(Status),
    /// Answer SERVING after this long.
    Slow(Duration),
}

fn fail(code: Code) -> Reply {
    Reply::Fail(Status::new(code, "scripted"))
}

fn pushback(code: Code, ms: &'static str) -> Reply {
    let mut status = Status::new(code, "scripted, with pushback");
    status
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", MetadataValue::from_static(ms));
    Reply::Fail(status)
}

struct Scripted {
    answer: Answer,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[tonic::async_trait]
impl Health for Scripted {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let header = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let i = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(Seen {
                at: Instant::now(),
                previous_attempts: header("grpc-previous-rpc-attempts"),
                timeout: header("grpc-timeout"),
                service_len: request.get_ref().service.len(),
            });
            seen.len() - 1
        };
        match (self.answer)(i) {
            Reply::Serving => {}
            Reply::Fail(status) => return Err(status),
            Reply::Slow(pause) => tokio::time::sleep(pause).await,
        }
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    /// A server-streaming call: the script's failure before any message (Trailers-Only), or
    /// one message and then UNAVAILABLE (after the headers: committed).
    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let i = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(Seen {
                at: Instant::now(),
                previous_attempts: None,
                timeout: None,
                service_len: request.get_ref().service.len(),
            });
            seen.len() - 1
        };
        if let Reply::Fail(status) = (self.answer)(i) {
            return Err(status);
        }
        let items = vec![
            Ok(HealthCheckResponse {
                status: ServingStatus::Serving.into(),
            }),
            Err(Status::unavailable(
                "the stream broke after its first message",
            )),
        ];
        Ok(Response::new(Box::pin(tokio_stream::iter(items))))
    }
}

struct TestServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestServer {
    async fn start(answer: impl Fn(usize) -> Reply + Send + Sync + 'static) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let service = HealthServer::new(Scripted {
            answer: Box::new(answer),
            seen: Arc::clone(&seen),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(async move {
            Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        TestServer {
            addr,
            seen,
            stop: Some(stop),
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn channel(&self) -> Channel {
        Endpoint::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect_lazy()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        drop(self.stop.take());
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn retrying(max_attempts: u32, codes: &[Code]) -> GrpcRetryLayer {
    GrpcRetryLayer::new(GrpcRetryPolicy::new(max_attempts, ms(10), ms(10), 1.0, codes).unwrap())
}

async fn check(
    client: &mut HealthClient<reattempt::tonic::GrpcRetryService<Channel>>,
) -> Result<Response<HealthCheckResponse>, Status> {
    client.check(HealthCheckRequest::default()).await
}

// ---------------------------------------------------------------------------------------------
// The issue's cases.

#[tokio::test]
async fn unavailable_twice_then_ok_is_three_requests_with_previous_attempts() {
    let server = TestServer::start(|i| {
        if i < 2 {
            fail(Code::Unavailable)
        } else {
            Reply::Serving
        }
    })
    .await;
    let mut client = HealthClient::new(retrying(4, &[Code::Unavailable]).layer(server.channel()));
    let reply = check(&mut client)
        .await
        .expect("the third attempt succeeds");
    assert_eq!(reply.get_ref().status(), ServingStatus::Serving);
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    let previous: Vec<_> = seen
        .iter()
        .map(|s| s.previous_attempts.as_deref())
        .collect();
    assert_eq!(previous, [None, Some("1"), Some("2")]);
    // A6: the client may set it in the received metadata too.
    assert_eq!(
        reply.metadata().get("grpc-previous-rpc-attempts").unwrap(),
        "2"
    );
}

#[tokio::test]
async fn a_pushback_of_300_ms_is_waited() {
    let server = TestServer::start(|i| {
        if i == 0 {
            pushback(Code::Unavailable, "300")
        } else {
            Reply::Serving
        }
    })
    .await;
    let mut client = HealthClient::new(retrying(3, &[Code::Unavailable]).layer(server.channel()));
    check(&mut client).await.expect("the retry succeeds");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let waited = seen[1].at - seen[0].at;
    assert!(
        waited >= ms(300),
        "the retry came {waited:?} after the pushback"
    );
    assert!(waited < ms(1000), "{waited:?}");
}

#[tokio::test]
async fn a_negative_pushback_is_one_request() {
    let server = TestServer::start(|_| pushback(Code::Unavailable, "-1")).await;
    let mut client = HealthClient::new(retrying(4, &[Code::Unavailable]).layer(server.channel()));
    let status = check(&mut client).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(server.calls(), 1);
}

/// Ported from grpc-go `test/retry_test.go`, `TestRetryStreaming`'s "Negative server pushback -
/// no retry", "Non-numeric server pushback - no retry" and "Multiple server pushback values - no
/// retry" (two `grpc-retry-pushback-ms` entries in one trailer): one request each, and a failure
/// for the throttle whether the status is one of the policy's codes or not (A6; grpc-go's
/// `shouldRetry` calls `retryThrottler.throttle()` before it looks at the code; grpc-java
/// `RetriableStreamTest`, `throttledStream_FailWithNonRetriableStatusCode_WithNonRetriablePushback`).
#[tokio::test]
async fn grpc_go_pushbacks_saying_stop_are_one_request_and_one_token() {
    let cases: [&'static [&'static str]; 3] = [&["-1"], &["xxx"], &["100", "10"]];
    for values in cases {
        for code in [Code::Unavailable, Code::InvalidArgument] {
            let server = TestServer::start(move |_| {
                let mut status = Status::new(code, "scripted, with pushback");
                for value in values {
                    status
                        .metadata_mut()
                        .append("grpc-retry-pushback-ms", MetadataValue::from_static(value));
                }
                Reply::Fail(status)
            })
            .await;
            let throttle = RetryThrottle::new(10, 0.5).unwrap();
            let layer = retrying(4, &[Code::Unavailable]).throttle(throttle.clone());
            let mut client = HealthClient::new(layer.layer(server.channel()));
            let status = check(&mut client).await.unwrap_err();
            assert_eq!(status.code(), code, "{values:?}");
            assert_eq!(server.calls(), 1, "{code:?} with {values:?}: not retried");
            assert!(
                (throttle.tokens() - 9.0).abs() < 1e-9,
                "{code:?} with {values:?}: a failure for the throttle, {} tokens left",
                throttle.tokens()
            );
        }
    }
}

#[tokio::test]
async fn invalid_argument_is_one_request() {
    let server = TestServer::start(|_| fail(Code::InvalidArgument)).await;
    let mut client = HealthClient::new(retrying(4, &[Code::Unavailable]).layer(server.channel()));
    let status = check(&mut client).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn a_request_past_the_replay_cap_is_sent_once() {
    let big = "x".repeat(100 * 1024);
    for (cap, requests) in [(64 * 1024, 1), (256 * 1024, 2)] {
        let server = TestServer::start(|i| {
            if i == 0 {
                fail(Code::Unavailable)
            } else {
                Reply::Serving
            }
        })
        .await;
        let layer = retrying(4, &[Code::Unavailable]).replay_cap(cap);
        let mut client = HealthClient::new(layer.layer(server.channel()));
        let request = HealthCheckRequest {
            service: big.clone(),
        };
        let outcome = client.check(request).await;
        assert_eq!(server.calls(), requests, "cap {cap}");
        assert!(server.seen().iter().all(|s| s.service_len == big.len()));
        if requests == 1 {
            assert_eq!(
                outcome.unwrap_err().code(),
                Code::Unavailable,
                "committed: its status"
            );
        } else {
            outcome.expect("replayed whole, the retry succeeds");
        }
    }
}

#[tokio::test]
async fn the_deadline_spans_every_attempt_and_ends_in_deadline_exceeded() {
    let server = TestServer::start(|_| fail(Code::Unavailable)).await;
    let policy = GrpcRetryPolicy::new(50, ms(60), ms(60), 1.0, &[Code::Unavailable]).unwrap();
    let layer = GrpcRetryLayer::new(policy).max_attempts_cap(50);
    let mut client = HealthClient::new(layer.layer(server.channel()));
    let mut request = Request::new(HealthCheckRequest::default());
    request.set_timeout(ms(250));
    let started = Instant::now();
    let status = client.check(request).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(took >= ms(250) && took < ms(1000), "{took:?}");
    let seen = server.seen();
    assert!(
        (2..=6).contains(&seen.len()),
        "{} attempts in 250 ms",
        seen.len()
    );
    // Each attempt is told the time left, not the whole timeout again.
    let left: Vec<u64> = seen
        .iter()
        .map(|s| {
            let t = s.timeout.as_deref().expect("grpc-timeout on every attempt");
            let (n, unit) = t.split_at(t.len() - 1);
            let n: u64 = n.parse().unwrap();
            match unit {
                "n" => n / 1_000_000,
                "u" => n / 1_000,
                "m" => n,
                "S" => n * 1000,
                other => panic!("unit {other}"),
            }
        })
        .collect();
    assert!(left[0] <= 250 && left[1] < left[0], "{left:?}");
}

#[tokio::test]
async fn max_attempts_is_capped_at_five_unless_raised() {
    // Ported from grpc-go test/retry_test.go, TestMaxCallAttempts: a service asking for 8
    // attempts gets the default cap of 5; a client raising the cap gets what it allows.
    for (service_max, cap, expected) in [
        (8, None, 5),
        (9, Some(7), 7),
        (3, Some(10), 3),
        (9, Some(4), 4),
    ] {
        let server = TestServer::start(|_| fail(Code::Unavailable)).await;
        let mut layer = retrying(service_max, &[Code::Unavailable]);
        if let Some(cap) = cap {
            layer = layer.max_attempts_cap(cap);
        }
        let mut client = HealthClient::new(layer.layer(server.channel()));
        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );
        assert_eq!(
            server.calls(),
            expected,
            "maxAttempts {service_max}, cap {cap:?}"
        );
    }
}

#[tokio::test]
async fn a_stream_is_retried_before_its_headers_and_committed_after() {
    // Trailers-Only UNAVAILABLE twice, then a stream that breaks after its first message.
    let server = TestServer::start(|i| {
        if i < 2 {
            fail(Code::Unavailable)
        } else {
            Reply::Serving
        }
    })
    .await;
    let mut client = HealthClient::new(retrying(4, &[Code::Unavailable]).layer(server.channel()));
    let mut stream = client
        .watch(HealthCheckRequest::default())
        .await
        .expect("the third attempt sends headers")
        .into_inner();
    let first = stream.message().await.expect("a first message").unwrap();
    assert_eq!(first.status(), ServingStatus::Serving);
    let broken = stream.message().await.unwrap_err();
    assert_eq!(
        broken.code(),
        Code::Unavailable,
        "after the headers: not retried"
    );
    assert_eq!(server.calls(), 3);
}

// ---------------------------------------------------------------------------------------------
// Hedging.

#[tokio::test]
async fn a_hedge_answers_for_a_slow_first_copy() {
    let server = TestServer::start(|i| {
        if i == 0 {
            Reply::Slow(ms(2000))
        } else {
            Reply::Serving
        }
    })
    .await;
    let policy = HedgingPolicy::new(3, ms(50), &[Code::Unavailable]).unwrap();
    let mut client = HealthClient::new(GrpcRetryLayer::hedging(policy).layer(server.channel()));
    let started = Instant::now();
    check(&mut client).await.expect("the hedge answers");
    let took = started.elapsed();
    assert!(took >= ms(50) && took < ms(1000), "{took:?}");
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "one hedge was enough");
    assert_eq!(seen[1].previous_attempts.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_non_fatal_status_sends_the_next_hedge_at_once_and_a_fatal_one_ends_the_call() {
    let server = TestServer::start(|i| {
        if i == 0 {
            fail(Code::Unavailable)
        } else {
            Reply::Serving
        }
    })
    .await;
    let policy = HedgingPolicy::new(3, ms(500), &[Code::Unavailable]).unwrap();
    let mut client = HealthClient::new(GrpcRetryLayer::hedging(policy).layer(server.channel()));
    let started = Instant::now();
    check(&mut client).await.expect("the next hedge answers");
    assert!(
        started.elapsed() < ms(400),
        "not after the 500 ms hedging delay"
    );
    assert_eq!(server.calls(), 2);

    let server = TestServer::start(|_| fail(Code::Internal)).await;
    let policy = HedgingPolicy::new(3, ms(500), &[Code::Unavailable]).unwrap();
    let mut client = HealthClient::new(GrpcRetryLayer::hedging(policy).layer(server.channel()));
    assert_eq!(check(&mut client).await.unwrap_err().code(), Code::Internal);
    assert_eq!(server.calls(), 1);
}

// ---------------------------------------------------------------------------------------------
// Ported from grpc-go.

/// Ported from grpc-go `test/retry_test.go`, `TestRetryUnary`: `ALREADY_EXISTS` is retried (4
/// attempts), INTERNAL is not; the server's call counter after each call is grpc-go's.
#[tokio::test]
async fn grpc_go_retry_unary() {
    let server = TestServer::start(|i| match i {
        0 | 2 | 5 => Reply::Serving,
        6 | 8 | 11 => fail(Code::Internal),
        _ => fail(Code::AlreadyExists),
    })
    .await;
    let config = ServiceConfig::from_json(
        r#"{"methodConfig": [{
            "name": [{"service": "grpc.health.v1.Health"}],
            "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                            "backoffMultiplier": 1.0, "retryableStatusCodes": ["ALREADY_EXISTS"]}
        }]}"#,
    )
    .unwrap();
    let mut client =
        HealthClient::new(GrpcRetryLayer::from_service_config(config).layer(server.channel()));
    // grpc-go's `i` is the index of the last call the server saw.
    for (want, i) in [
        (Code::Ok, 0),
        (Code::Ok, 2),
        (Code::Ok, 5),
        (Code::Internal, 6),
        (Code::Internal, 8),
        (Code::Internal, 11),
        (Code::AlreadyExists, 15),
    ] {
        let code = check(&mut client)
            .await
            .map_or_else(|s| s.code(), |_| Code::Ok);
        assert_eq!(code, want, "after call {i}");
        assert_eq!(server.calls() - 1, i);
    }
}

/// Ported from grpc-go `test/retry_test.go`, `TestRetryThrottling`: 10 tokens, ratio 0.5; the
/// throttle stops retries at half, and successes bring them back.
#[tokio::test]
async fn grpc_go_retry_throttling() {
    let server = TestServer::start(|i| match i {
        0 | 3 | 6 | 10 | 11 | 12 | 13 | 14 | 16 | 18 => Reply::Serving,
        _ => fail(Code::Unavailable),
    })
    .await;
    let config = ServiceConfig::from_json(
        r#"{"methodConfig": [{
            "name": [{"service": "grpc.health.v1.Health"}],
            "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                            "backoffMultiplier": 1.0, "retryableStatusCodes": ["UNAVAILABLE"]}
        }],
        "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}}"#,
    )
    .unwrap();
    let throttle = config.retry_throttling().unwrap();
    let mut client = HealthClient::new(
        GrpcRetryLayer::from_service_config(config)
            .throttle(throttle.clone())
            .layer(server.channel()),
    );
    for (want, i) in [
        (Code::Ok, 0),
        (Code::Ok, 3),
        (Code::Ok, 6),
        (Code::Unavailable, 8),
        (Code::Unavailable, 9),
        (Code::Ok, 10),
        (Code::Ok, 11),
        (Code::Ok, 12),
        (Code::Ok, 13),
        (Code::Ok, 14),
        (Code::Ok, 16),
        (Code::Unavailable, 17),
    ] {
        let code = check(&mut client)
            .await
            .map_or_else(|s| s.code(), |_| Code::Ok);
        assert_eq!(code, want, "after call {i}");
        assert_eq!(server.calls() - 1, i);
    }
}

/// A method the service config does not name is sent once; one it names is retried (the
/// config's name matching, through the layer).
#[tokio::test]
async fn only_the_methods_the_config_names_are_retried() {
    let config = r#"{"methodConfig": [{
        "name": [{"service": "grpc.health.v1.Health", "method": "Check"}],
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                        "backoffMultiplier": 1.0, "retryableStatusCodes": ["UNAVAILABLE"]}
    }]}"#;
    let server = TestServer::start(|_| fail(Code::Unavailable)).await;
    let layer = GrpcRetryLayer::from_service_config(ServiceConfig::from_json(config).unwrap());
    let mut client = HealthClient::new(layer.layer(server.channel()));
    assert!(check(&mut client).await.is_err());
    assert_eq!(server.calls(), 3, "Check is named: retried");
    let _ = client
        .watch(HealthCheckRequest::default())
        .await
        .unwrap_err();
    assert_eq!(server.calls(), 4, "Watch is not: sent once");
}
