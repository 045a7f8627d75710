//! End to end with tonic 0.14 (feature `tonic`): a tonic-health server on 127.0.0.1, answering
//! with a script of statuses, and a `HealthClient` over a `Channel` called through
//! `#[retryable(timeout = "300ms", retry_if = reattempt::transient)]` and through the closure API.
//! The server runs on a thread and a runtime of its own, so that killing it (dropping that
//! runtime) closes its listener and every connection at once, as a killed process does; it is
//! restarted on the same port. Real clock and real sockets: each test takes well under a second.

use std::collections::VecDeque;
use std::error::Error as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reattempt::{CircuitBreaker, RetryContext, RetryPolicy, retryable};
use tonic::codegen::tokio_stream::Stream;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

// ---------------------------------------------------------------------------------------------
// The code under test, as a newcomer writes it.

// A health check is a read: safe to repeat after an attempt whose outcome is unknown.
#[retryable(max_attempts = 4, delay = "20ms", timeout = "300ms", retry_if = reattempt::transient,
            idempotent = true)]
async fn check(client: &mut HealthClient<Channel>) -> Result<ServingStatus, Status> {
    let reply = client.check(HealthCheckRequest::default()).await?;
    Ok(reply.into_inner().status())
}

/// The same with a circuit breaker: `Status` needs nothing else.
#[retryable(max_attempts = 4, delay = "20ms", timeout = "300ms", retry_if = reattempt::transient,
            idempotent = true, circuit_breaker = breaker)]
async fn guarded_check(
    client: &mut HealthClient<Channel>,
    breaker: &CircuitBreaker,
) -> Result<ServingStatus, Status> {
    let reply = client.check(HealthCheckRequest::default()).await?;
    Ok(reply.into_inner().status())
}

/// Retrying chosen codes in the attribute: ABORTED (a conflict the server asks to retry), and
/// nothing else.
#[retryable(max_attempts = 4, delay = "20ms", timeout = "300ms",
            retry_if = reattempt::tonic::codes(&[Code::Aborted]))]
async fn check_retrying_aborted(
    client: &mut HealthClient<Channel>,
) -> Result<ServingStatus, Status> {
    let reply = client.check(HealthCheckRequest::default()).await?;
    Ok(reply.into_inner().status())
}

/// The same through an outage: enough attempts, and sleeps that cannot all be short ("equal"
/// jitter keeps half of each delay), to outlast a restart of a few hundred milliseconds; each
/// retry is noted, to check what was retried.
#[retryable(max_attempts = 10, delay = "50ms", max_delay = "200ms", jitter = "equal",
            timeout = "300ms", retry_if = reattempt::transient, idempotent = true,
            on_retry = note_retry)]
async fn check_through_outage(client: &mut HealthClient<Channel>) -> Result<ServingStatus, Status> {
    let reply = client.check(HealthCheckRequest::default()).await?;
    Ok(reply.into_inner().status())
}

/// The statuses `check_through_outage` retried (only the outage test calls it).
static RETRIED: Mutex<Vec<Status>> = Mutex::new(Vec::new());

fn note_retry(status: &Status, _: &RetryContext, _: Duration) {
    RETRIED.lock().unwrap().push(status.clone());
}

// ---------------------------------------------------------------------------------------------
// The scripted server.

/// What the server does with a call; once the script is used up, it answers SERVING.
#[derive(Clone, Copy, Debug)]
enum Step {
    Fail(Code),
    Stall(Duration),
}

#[derive(Default)]
struct Script {
    steps: Mutex<VecDeque<Step>>,
    calls: AtomicUsize,
}

impl Script {
    fn new(steps: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Arc::new(Script {
            steps: Mutex::new(steps.into_iter().collect()),
            calls: AtomicUsize::new(0),
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(SeqCst)
    }
}

struct Scripted(Arc<Script>);

#[tonic::async_trait]
impl Health for Scripted {
    async fn check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        self.0.calls.fetch_add(1, SeqCst);
        let step = self.0.steps.lock().unwrap().pop_front();
        match step {
            Some(Step::Fail(code)) => return Err(Status::new(code, "scripted")),
            Some(Step::Stall(pause)) => tokio::time::sleep(pause).await,
            None => {}
        }
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not scripted"))
    }
}

/// A server on its own thread and runtime.
struct TestServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Serves `script` on `addr` (`127.0.0.1:0` for a free port).
    fn start(addr: SocketAddr, script: &Arc<Script>) -> TestServer {
        let listener = std::net::TcpListener::bind(addr).expect("bind the test server");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = HealthServer::new(Scripted(Arc::clone(script)));
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let incoming =
                    tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
                let serve = Server::builder()
                    .add_service(service)
                    .serve_with_incoming(incoming);
                tokio::select! {
                    served = serve => served.unwrap(),
                    _ = stopped => {}
                }
            });
            // Dropping the runtime drops every connection task: the sockets close at once.
            drop(runtime);
        });
        TestServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Kills the server: its listener and every open connection are closed when this returns.
    fn kill(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shut();
    }
}

fn client(addr: SocketAddr) -> HealthClient<Channel> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_millis(250))
        .connect_lazy();
    HealthClient::new(channel)
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn unavailable_twice_then_serving() {
    let script = Script::new([Step::Fail(Code::Unavailable), Step::Fail(Code::Unavailable)]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(server.addr);

    assert_eq!(check(&mut client).await.unwrap(), ServingStatus::Serving);
    assert_eq!(script.calls(), 3);
}

#[tokio::test]
async fn invalid_argument_is_returned_at_once() {
    let script = Script::new([Step::Fail(Code::InvalidArgument)]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(server.addr);

    let status = check(&mut client).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(status.message(), "scripted");
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_stalled_attempt_is_cut_by_timeout_and_retried() {
    let script = Script::new([Step::Stall(Duration::from_secs(5))]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(server.addr);

    let start = Instant::now();
    assert_eq!(check(&mut client).await.unwrap(), ServingStatus::Serving);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(script.calls(), 2);
}

#[tokio::test]
async fn a_timeout_that_never_ends_is_deadline_exceeded() {
    let script = Script::new([Step::Stall(Duration::from_secs(5)); 4]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(server.addr);

    let status = check(&mut client).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert!(status.source().unwrap().is::<reattempt::Elapsed>());
    assert_eq!(script.calls(), 4);
}

/// Calls run while the server is killed (one of them in flight) and, 300 ms later, restarted on
/// the same port: every call succeeds, after retrying the transport failures tonic reports
/// (`UNKNOWN` "transport error", `UNAVAILABLE` "tcp connect error", `CANCELLED` "operation was
/// canceled"), none of which the server sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_and_restarted_mid_run() {
    let first = Script::new([]);
    let server = TestServer::start(any_port(), &first);
    let addr = server.addr;
    let client = client(addr);
    check_through_outage(&mut client.clone()).await.unwrap();
    // The next call stalls, so that it is in flight when the server dies.
    first
        .steps
        .lock()
        .unwrap()
        .push_back(Step::Stall(Duration::from_millis(250)));

    let second = Script::new([]);
    let restarted = Arc::clone(&second);
    let outage = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        server.kill();
        std::thread::sleep(Duration::from_millis(300));
        TestServer::start(addr, &restarted)
    });

    let start = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..4_u64 {
        let mut client = client.clone();
        callers.spawn(async move {
            let mut results = Vec::new();
            tokio::time::sleep(Duration::from_millis(10 * caller)).await;
            while start.elapsed() < Duration::from_millis(700) {
                results.push(check_through_outage(&mut client).await);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            results
        });
    }
    let results: Vec<_> = callers.join_all().await.into_iter().flatten().collect();
    let restarted = outage.join().unwrap();

    assert!(results.len() >= 8, "{} calls", results.len());
    for result in &results {
        assert_eq!(result.as_ref().unwrap(), &ServingStatus::Serving);
    }
    assert!(
        first.calls() >= 2,
        "the warm-up call, the stalled one, those before the kill"
    );
    assert!(second.calls() >= 1, "the restarted server answered");
    let retried = RETRIED.lock().unwrap();
    assert!(!retried.is_empty(), "the kill was noticed");
    for status in retried.iter() {
        // A client-side failure (a server's status has no source) of the kinds tonic reports.
        assert!(status.source().is_some(), "{status:?}");
        assert!(
            matches!(
                status.code(),
                Code::Unknown | Code::Unavailable | Code::Cancelled
            ),
            "{status:?}"
        );
    }
    // The call in flight at the kill fails with a status a rule on codes alone would not retry
    // (`UNKNOWN` "transport error" over a broken pipe, in tonic 0.14).
    assert!(
        retried
            .iter()
            .any(|status| status.code() != Code::Unavailable),
        "{retried:?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    drop(restarted);
}

#[tokio::test]
async fn a_circuit_breaker_needs_nothing_else() {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let script = Script::new([Step::Fail(Code::Unavailable); 4]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(server.addr);

    // Two real UNAVAILABLEs open the breaker; the retry it turns away ends the call with the last
    // real status.
    let status = guarded_check(&mut client, &breaker).await.unwrap_err();
    assert_eq!(
        (status.code(), status.message()),
        (Code::Unavailable, "scripted")
    );
    assert_eq!(script.calls(), 2);
    // The next call is turned away before any attempt: the rejection as a `Status`.
    let rejected = guarded_check(&mut client, &breaker).await.unwrap_err();
    assert_eq!(rejected.code(), Code::Unavailable);
    assert_eq!(rejected.message(), "circuit breaker is open");
    assert!(rejected.source().unwrap().is::<reattempt::BreakerOpen>());
    assert!(!reattempt::transient(&rejected));
    assert_eq!(script.calls(), 2);
}

/// `reattempt::tonic::codes` in the attribute: the listed code is retried, another is not.
#[tokio::test]
async fn codes_in_the_attribute() {
    let script = Script::new([
        Step::Fail(Code::Aborted),
        Step::Fail(Code::Aborted),
        Step::Fail(Code::Unavailable),
    ]);
    let server = TestServer::start(any_port(), &script);
    let mut client = client(server.addr);

    let status = check_retrying_aborted(&mut client).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "not in the set: returned");
    assert_eq!(script.calls(), 3);
    assert_eq!(
        check_retrying_aborted(&mut client).await.unwrap(),
        ServingStatus::Serving
    );
    assert_eq!(script.calls(), 4);
}

/// `reattempt::tonic::codes` through the closure API: the listed codes are retried, others not.
#[tokio::test]
async fn codes_through_the_closure_api() {
    use reattempt::tonic::codes;

    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .delay(Duration::from_millis(10))
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let script = Script::new([
        Step::Fail(Code::Aborted),
        Step::Fail(Code::ResourceExhausted),
    ]);
    let server = TestServer::start(any_port(), &script);
    let client = client(server.addr);
    let call = || {
        let mut client = client.clone();
        async move {
            let reply = client.check(HealthCheckRequest::default()).await?;
            Ok::<_, Status>(reply.into_inner().status())
        }
    };

    let reply = policy
        .retry(call)
        .retry_if(codes(&[Code::Aborted, Code::ResourceExhausted]))
        .await;
    assert_eq!(reply.unwrap(), ServingStatus::Serving);
    assert_eq!(script.calls(), 3);

    // A code not in the set.
    script
        .steps
        .lock()
        .unwrap()
        .push_back(Step::Fail(Code::Unavailable));
    let status = policy
        .retry(call)
        .retry_if(codes(&[Code::Aborted, Code::ResourceExhausted]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(script.calls(), 4);
}

/// A `Status` made from a breaker's rejection, returned by a server whose own dependency call is
/// behind an open breaker (its handler propagates the error with `?`), is not retried by the
/// server's client: A6's "do not retry" pushback crosses the wire (found by the hostile review:
/// the client made 4 calls, multiplying the load on a service that had shed it).
mod next_hop {
    use std::pin::Pin;
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::time::Duration;

    use reattempt::{CircuitBreaker, retryable};
    use tonic::codegen::tokio_stream::Stream;
    use tonic::transport::{Channel, Endpoint, Server};
    use tonic::{Code, Request, Response, Status};
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::health_server::{Health, HealthServer};
    use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

    static DOWNSTREAM: LazyLock<CircuitBreaker> = LazyLock::new(|| {
        let b = CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(Duration::from_secs(600))
            .build()
            .unwrap();
        let permit = b.try_acquire().unwrap();
        b.record(permit, false); // open
        b
    });
    static HANDLED: AtomicUsize = AtomicUsize::new(0);

    // The server's own dependency call, behind its breaker (open).
    #[retryable(max_attempts = 3, delay = "1ms", retry_if = reattempt::transient, circuit_breaker = DOWNSTREAM)]
    async fn downstream() -> Result<i32, Status> {
        Ok(1)
    }

    struct Srv;
    #[tonic::async_trait]
    impl Health for Srv {
        async fn check(
            &self,
            _: Request<HealthCheckRequest>,
        ) -> Result<Response<HealthCheckResponse>, Status> {
            HANDLED.fetch_add(1, SeqCst);
            let status = downstream().await?;
            Ok(Response::new(HealthCheckResponse { status }))
        }
        type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;
        async fn watch(
            &self,
            _: Request<HealthCheckRequest>,
        ) -> Result<Response<Self::WatchStream>, Status> {
            Err(Status::unimplemented(""))
        }
    }

    // The client, as the README writes it.
    #[retryable(max_attempts = 4, delay = "10ms", retry_if = reattempt::transient, idempotent = true)]
    async fn check(client: &mut HealthClient<Channel>) -> Result<i32, Status> {
        Ok(client
            .check(HealthCheckRequest::default())
            .await?
            .into_inner()
            .status)
    }

    #[tokio::test]
    async fn a_rejection_status_is_not_retried_by_the_next_hop() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(
            Server::builder()
                .add_service(HealthServer::new(Srv))
                .serve_with_incoming(incoming),
        );
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_lazy();
        let mut client = HealthClient::new(channel);

        let status = check(&mut client).await.unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "circuit breaker is open");
        assert_eq!(
            HANDLED.load(SeqCst),
            1,
            "the server's breaker rejection was retried by its client"
        );
    }
}

/// The gRPC chapter's two stacks, each awaited inside `tokio::spawn` (servers spawn their
/// calls): the attribute over a `HealthClient`, and a `HealthClient` over the `GrpcRetryLayer`
/// built from a service config.
#[tokio::test]
async fn the_grpc_chapters_stacks_run_in_spawned_tasks() {
    use reattempt::tonic::{GrpcRetryLayer, ServiceConfig};
    use tower_layer::Layer;

    let script = Script::new([Step::Fail(Code::Unavailable), Step::Fail(Code::Unavailable)]);
    let server = TestServer::start(any_port(), &script);
    let mut attribute_client = client(server.addr);
    let status = tokio::spawn(async move { check(&mut attribute_client).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, ServingStatus::Serving);
    assert_eq!(script.calls(), 3, "two UNAVAILABLEs, then SERVING");

    let script = Script::new([Step::Fail(Code::Unavailable)]);
    let server = TestServer::start(any_port(), &script);
    let config = ServiceConfig::from_json(
        r#"{ "methodConfig": [{ "name": [{ "service": "grpc.health.v1.Health" }],
             "retryPolicy": { "maxAttempts": 4, "initialBackoff": "0.02s", "maxBackoff": "1s",
                              "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] } }] }"#,
    )
    .unwrap();
    let channel = Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect_lazy();
    let mut layered = HealthClient::new(GrpcRetryLayer::from_service_config(config).layer(channel));
    let reply = tokio::spawn(async move { layered.check(HealthCheckRequest::default()).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.into_inner().status(), ServingStatus::Serving);
    assert_eq!(script.calls(), 2, "the UNAVAILABLE, then SERVING");
}
