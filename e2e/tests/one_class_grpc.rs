//! One vocabulary, one behaviour (issue 37), the gRPC layer's row of `tests/one_class.rs`: a
//! tonic-health server on loopback answers `RESOURCE_EXHAUSTED` (throttling), then `UNAVAILABLE`
//! (transient), then `SERVING`, under `Preset::Aws2026`'s policy and budget on tokio's paused
//! clock. The layer sleeps what every other driver sleeps (1 s, then 100 ms) and leaves the same
//! tokens (throttling costs 5, transient 14, given back on success), whether its hooks are the
//! user's (stating no class) or the closure API's over the same channel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::testing::{Trace, trace};
use reattempt::tonic::{GrpcRetryLayer, codes};
use reattempt::{Hooks, Jitter, Preset, RetryBudget, RetryPolicy};
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_layer::Layer;

/// `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, then `SERVING`.
struct Scripted(Arc<AtomicU32>);

#[tonic::async_trait]
impl Health for Scripted {
    async fn check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        match self.0.fetch_add(1, SeqCst) {
            0 => Err(Status::resource_exhausted("slow down")),
            1 => Err(Status::unavailable("restarting")),
            _ => Ok(Response::new(HealthCheckResponse {
                status: ServingStatus::Serving.into(),
            })),
        }
    }

    type WatchStream = tonic::codegen::tokio_stream::Empty<Result<HealthCheckResponse, Status>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not scripted"))
    }
}

async fn server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
    let service = HealthServer::new(Scripted(Arc::new(AtomicU32::new(0))));
    tokio::spawn(async move {
        Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await
            .unwrap();
    });
    addr
}

fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy()
}

/// The preset's schedule without its jitter; a health check is safe to repeat after an
/// `UNAVAILABLE` (whose outcome is unknown).
fn policy() -> RetryPolicy {
    Preset::Aws2026
        .policy()
        .jitter(Jitter::None)
        .idempotent(true)
        .build()
        .unwrap()
}

fn budget() -> RetryBudget {
    Preset::Aws2026.budget().build().unwrap()
}

/// What every driver does with the scenario (as in `tests/one_class.rs`).
fn assert_as_every_driver(driver: &str, succeeded: bool, trace: &Trace, budget: &RetryBudget) {
    let classes: Vec<String> = trace.retries().into_iter().map(|r| r.class).collect();
    assert_eq!(
        (succeeded, trace.delays(), classes, budget.available()),
        (
            true,
            vec![Duration::from_secs(1), Duration::from_millis(100)],
            vec!["throttling".to_owned(), "transient".to_owned()],
            500 - 5 - 14 + 14,
        ),
        "{driver}"
    );
}

/// A user's hooks retrying two codes, stating no class: the layer knows the error is a
/// `Status`, and `RESOURCE_EXHAUSTED` is throttling.
#[derive(Clone)]
struct TwoCodes;

impl Hooks<http::Response<tonic::body::Body>, Status> for TwoCodes {
    fn retry_if(&mut self, status: &Status) -> bool {
        matches!(status.code(), Code::ResourceExhausted | Code::Unavailable)
    }
}

#[tokio::test(start_paused = true)]
async fn the_grpc_layer_honours_the_class_of_its_statuses() {
    let addr = server().await;
    let budget = Arc::new(budget());
    let layer = GrpcRetryLayer::from_policy(policy())
        .hooks(TwoCodes)
        .budget(Arc::clone(&budget));
    let mut client = HealthClient::new(layer.layer(channel(addr)));
    let (out, trace) = trace(client.check(HealthCheckRequest::default())).await;
    assert_as_every_driver(
        "gRPC layer, hooks of the user's",
        out.is_ok(),
        &trace,
        &budget,
    );
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_over_tonic_honours_the_same_classes() {
    let addr = server().await;
    let (budget, policy) = (budget(), policy());
    let client = HealthClient::new(channel(addr));
    let call = policy
        .retry(|| {
            let mut client = client.clone();
            async move { client.check(HealthCheckRequest::default()).await }
        })
        .retry_if(codes(&[Code::ResourceExhausted, Code::Unavailable]))
        .budget(&budget);
    let (out, trace) = trace(call).await;
    assert_as_every_driver(
        "closure API, .retry_if(codes(..))",
        out.is_ok(),
        &trace,
        &budget,
    );
}
