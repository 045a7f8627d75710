//! Hedged gRPC calls whose request body is past the replay cap, under load: a tonic-health
//! server on 127.0.0.1 and a `HealthClient` over one `Channel` wrapped in the layer, each call
//! carrying 1 MiB (the cap is 64 KiB) with a hedging delay of 1 ms, well under the server's
//! answer time, so that hedges would start. gRFC A6: past the buffer limit the call is committed
//! to the attempt that holds the body; no other copy may end it, and a copy that cannot carry
//! the body is not sent. Every call must succeed, the server must see each request exactly once,
//! and no copy may reset a stream it cannot carry the body on (a flood of client resets trips the
//! server's HTTP/2 guard, which closes the connection under every call on it): one TCP connection
//! serves the whole test. The hedges the layer started
//! are counted (its `tracing` events) and the copies it handed to the channel (a counting
//! service under it): a copy that cannot carry the body is not sent at all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reattempt::tonic::{GrpcRetryLayer, GrpcRetryService, HedgingPolicy};
use tokio::net::TcpListener;
use tonic::codegen::tokio_stream::{Stream, StreamExt};
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::ServiceBuilder;
use tower_layer::Layer;
use tracing_subscriber::layer::SubscriberExt;

/// The request body: 1 MiB, sixteen times the layer's default replay cap.
const BODY: usize = 1024 * 1024;

/// Counts what the server processed: each request by its tag (the body's first bytes).
#[derive(Clone, Default)]
struct Counting {
    seen: Arc<Mutex<HashMap<String, usize>>>,
}

#[tonic::async_trait]
impl Health for Counting {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = &request.get_ref().service;
        assert_eq!(service.len(), BODY, "the whole body arrived");
        let tag = service.split(' ').next().unwrap_or_default().to_owned();
        *self.seen.lock().unwrap().entry(tag).or_default() += 1;
        // Slower than the hedging delay: a hedge would start while this copy is processed.
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream =
        std::pin::Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not used"))
    }
}

/// The hedges the layer started, by the layer's name (its `tracing` event "…; hedging").
fn hedges(name: &str) -> usize {
    hedge_counts()
        .lock()
        .unwrap()
        .get(name)
        .copied()
        .unwrap_or(0)
}

fn hedge_counts() -> &'static Mutex<HashMap<String, usize>> {
    static COUNTS: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    COUNTS.get_or_init(|| {
        let _ = tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(CountHedges),
        );
        Mutex::default()
    })
}

/// Counts the layer's "hedging" events by its `name` field.
struct CountHedges;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountHedges {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields {
            name: String,
            message: String,
        }
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "name" {
                    value.clone_into(&mut self.name);
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.message = format!("{value:?}");
                }
            }
        }
        if event.metadata().target() != "reattempt" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.message.ends_with("hedging") {
            *hedge_counts()
                .lock()
                .unwrap()
                .entry(fields.name)
                .or_default() += 1;
        }
    }
}

struct TestServer {
    counting: Counting,
    /// TCP connections the server accepted.
    connections: Arc<AtomicUsize>,
    channel: Channel,
    /// The copies the layer handed to the channel.
    sent: Arc<AtomicUsize>,
    /// The layer's name in its events.
    name: &'static str,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestServer {
    async fn start(name: &'static str) -> TestServer {
        hedge_counts();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counting = Counting::default();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::clone(&connections);
        let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener)
            .map(move |stream| {
                accepted.fetch_add(1, SeqCst);
                stream
            });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = HealthServer::new(counting.clone());
        tokio::spawn(async move {
            // tonic's server keeps hyper's guard against a flood of client resets (HTTP/2
            // "rapid reset"): past its limit it closes the connection, ending every call on it.
            Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_lazy();
        TestServer {
            counting,
            connections,
            channel,
            sent: Arc::default(),
            name,
            stop: Some(stop),
        }
    }

    fn client(&self) -> HealthClient<GrpcRetryService<impl CountedChannel>> {
        let policy = HedgingPolicy::new(3, Duration::from_millis(1), &[Code::Unavailable]).unwrap();
        let sent = Arc::clone(&self.sent);
        let counted = ServiceBuilder::new()
            .map_request(move |request: http::Request<tonic::body::Body>| {
                sent.fetch_add(1, SeqCst);
                request
            })
            .service(self.channel.clone());
        HealthClient::new(
            GrpcRetryLayer::hedging(policy)
                .name(self.name)
                .layer(counted),
        )
    }

    /// How often the server processed each tag.
    fn seen(&self) -> HashMap<String, usize> {
        self.counting.seen.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        drop(self.stop.take());
    }
}

/// The channel under the layer, counting the copies it is handed.
trait CountedChannel:
    tower_service::Service<
        http::Request<tonic::body::Body>,
        Response = http::Response<tonic::body::Body>,
        Error = tonic::transport::Error,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> CountedChannel for S where
    S: tower_service::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = tonic::transport::Error,
            Future: Send,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// A 1 MiB request tagged `tag`.
fn request(tag: &str) -> HealthCheckRequest {
    let mut service = format!("{tag} ");
    service.extend(std::iter::repeat_n('x', BODY - service.len()));
    HealthCheckRequest { service }
}

/// The calls' outcomes by code (`Ok` for a success), for the assertion's message.
fn by_code(outcomes: &[Result<(), Code>]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for outcome in outcomes {
        let key = match outcome {
            Ok(()) => "Ok".to_owned(),
            Err(code) => format!("{code:?}"),
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}

fn assert_each_once_on_one_connection(
    server: &TestServer,
    outcomes: &[Result<(), Code>],
    calls: usize,
) {
    let seen = server.seen();
    assert!(
        outcomes.iter().all(Result::is_ok),
        "every call succeeds: {:?}; the server processed {} requests",
        by_code(outcomes),
        seen.values().sum::<usize>()
    );
    assert_eq!(seen.len(), calls, "every request reached the server");
    assert!(
        seen.values().all(|&n| n == 1),
        "each request processed exactly once: {:?}",
        seen.iter().filter(|(_, n)| **n != 1).collect::<Vec<_>>()
    );
    assert_eq!(
        server.connections.load(SeqCst),
        1,
        "the server never closed the connection (the channel would have opened another)"
    );
    // Every copy the channel was handed carried its body: a copy that could not was not sent
    // (no stream opened, none reset).
    assert_eq!(
        server.sent.load(SeqCst),
        calls,
        "copies sent ({} hedges started)",
        hedges(server.name)
    );
    eprintln!(
        "{}: {calls} calls, {} hedges started, {} copies sent",
        server.name,
        hedges(server.name),
        server.sent.load(SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sequential_hedged_calls_past_the_cap_each_succeed_once() {
    let server = TestServer::start("sequential").await;
    let mut client = server.client();
    let mut outcomes = Vec::new();
    for i in 0..20 {
        let outcome = client.check(request(&format!("seq-{i}"))).await;
        outcomes.push(outcome.map(drop).map_err(|s| s.code()));
    }
    assert_each_once_on_one_connection(&server, &outcomes, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_hedged_calls_past_the_cap_each_succeed_once() {
    let server = TestServer::start("concurrent").await;
    let calls: Vec<_> = (0..200)
        .map(|i| {
            let mut client = server.client();
            tokio::spawn(async move {
                let outcome = client.check(request(&format!("par-{i}"))).await;
                outcome.map(drop).map_err(|s| s.code())
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.await.unwrap());
    }
    assert_each_once_on_one_connection(&server, &outcomes, 200);
}
