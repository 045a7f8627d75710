//! A gRPC call retried two ways, against a tonic-health server this program starts on
//! `127.0.0.1` (port 0), which answers `UNAVAILABLE` and then `SERVING` as scripted:
//!
//! 1. `reattempt::tonic::GrpcRetryLayer` around the client's `Channel`: gRFC A6's retry policy
//!    (the one a gRPC service config's `retryPolicy` gives), with `grpc-previous-rpc-attempts`
//!    on each retry and the server's `grpc-retry-pushback-ms` honoured;
//! 2. `#[retryable(retry_if = reattempt::transient)]` on a function calling the client: the
//!    codes A6 calls retryable (`UNAVAILABLE`, …) and transport errors are retried, others not.
//!
//! Run it with `cargo run -p reattempt-e2e --example grpc --features tonic` (under a second;
//! no setup: tonic-health ships its generated code, so no `protoc`).
//!
//! To copy it into your own crate:
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["tonic"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "net"] }
//! tonic = "0.14"
//! tonic-health = "0.14"
//! tower-layer = "0.3"
//! ```

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
use reattempt::{RetryContext, retryable};
use tonic::codegen::tokio_stream::Stream;
use tonic::codegen::tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_layer::Layer;

/// A health service answering from a script: each call takes the next code (an error), and
/// answers `SERVING` once the script is empty.
#[derive(Clone, Default)]
struct Scripted {
    script: Arc<Mutex<VecDeque<Code>>>,
}

impl Scripted {
    fn fail_next(&self, codes: &[Code]) {
        self.script.lock().unwrap().extend(codes);
    }
}

#[tonic::async_trait]
impl Health for Scripted {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let previous = request
            .metadata()
            .get("grpc-previous-rpc-attempts")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none");
        let next = self.script.lock().unwrap().pop_front();
        if let Some(code) = next {
            println!("    server: Check (previous attempts: {previous}) -> {code:?}");
            return Err(Status::new(code, "scripted"));
        }
        println!("    server: Check (previous attempts: {previous}) -> SERVING");
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not in this example"))
    }
}

/// The retrying function: A6's retryable codes and transport errors are retried. A health check
/// is a read, so it says it is safe to repeat after an `UNAVAILABLE` (which may come after the
/// server acted).
#[retryable(max_attempts = 4, delay = "100ms", retry_if = reattempt::transient,
            idempotent = true, on_retry = print_retry)]
async fn check(client: &mut HealthClient<Channel>) -> Result<ServingStatus, Status> {
    let reply = client.check(HealthCheckRequest::default()).await?;
    Ok(reply.into_inner().status())
}

fn print_retry(status: &Status, ctx: &RetryContext, delay: Duration) {
    println!(
        "    client: attempt {} failed ({:?}); retrying in {} ms",
        ctx.attempt(),
        status.code(),
        delay.as_millis()
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let service = Scripted::default();
    let server = Server::builder()
        .add_service(HealthServer::new(service.clone()))
        .serve_with_incoming(TcpListenerStream::new(listener));
    tokio::spawn(server);
    let channel = Endpoint::from_shared(format!("http://{addr}"))?.connect_lazy();

    println!("1. Through GrpcRetryLayer: UNAVAILABLE, then OK");
    service.fail_next(&[Code::Unavailable]);
    let policy = GrpcRetryPolicy::new(
        4,                          // maxAttempts
        Duration::from_millis(100), // initialBackoff
        Duration::from_secs(1),     // maxBackoff
        2.0,                        // backoffMultiplier
        &[Code::Unavailable],       // retryableStatusCodes
    )?;
    let mut client = HealthClient::new(GrpcRetryLayer::new(policy).layer(channel.clone()));
    let reply = client.check(HealthCheckRequest::default()).await?;
    println!("    client: {:?}", reply.get_ref().status());
    assert_eq!(reply.get_ref().status(), ServingStatus::Serving);

    println!("2. Through #[retryable(retry_if = reattempt::transient)]: UNAVAILABLE, then OK");
    service.fail_next(&[Code::Unavailable]);
    let status = check(&mut HealthClient::new(channel.clone())).await?;
    println!("    client: {status:?}");
    assert_eq!(status, ServingStatus::Serving);

    println!("3. INVALID_ARGUMENT is not retried");
    service.fail_next(&[Code::InvalidArgument]);
    let error = check(&mut HealthClient::new(channel)).await.unwrap_err();
    println!("    client: gave up with {:?}", error.code());
    assert_eq!(error.code(), Code::InvalidArgument);
    Ok(())
}
