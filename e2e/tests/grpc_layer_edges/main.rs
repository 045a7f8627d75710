//! The gRPC layer's edges, each found by a hostile review and failing before its fix: what A6,
//! gRPC's HTTP/2 mapping, tonic or the layer's rustdoc says, against an in-process transport
//! under tokio's paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy, HedgingPolicy, RetryThrottle};
use tonic::Code;
use tonic::body::Body;
use tower_layer::Layer;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Fut = Pin<Box<dyn Future<Output = Result<http::Response<Body>, BoxError>> + Send>>;
type Handler = Arc<dyn Fn(usize, http::Request<Body>) -> Fut + Send + Sync>;

/// An in-process transport: call `i` (0-based) is answered by the handler.
#[derive(Clone)]
struct Mock {
    calls: Arc<AtomicUsize>,
    handler: Handler,
}

impl Mock {
    fn new(f: impl Fn(usize, http::Request<Body>) -> Fut + Send + Sync + 'static) -> Self {
        Mock {
            calls: Arc::new(AtomicUsize::new(0)),
            handler: Arc::new(f),
        }
    }
}

impl Service<http::Request<Body>> for Mock {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Fut;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: http::Request<Body>) -> Fut {
        let i = self.calls.fetch_add(1, SeqCst);
        (self.handler)(i, req)
    }
}

fn trailers_only(code: i32, pushback: Option<&'static str>) -> http::Response<Body> {
    let mut b = http::Response::builder()
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string());
    if let Some(p) = pushback {
        b = b.header("grpc-retry-pushback-ms", p);
    }
    b.body(Body::empty()).unwrap()
}

fn ok_headers() -> http::Response<Body> {
    http::Response::builder()
        .header("content-type", "application/grpc")
        .body(Body::empty())
        .unwrap()
}

fn request() -> http::Request<Body> {
    http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .header("content-type", "application/grpc")
        .body(Body::empty())
        .unwrap()
}

fn unavailable_policy() -> GrpcRetryPolicy {
    GrpcRetryPolicy::new(
        4,
        Duration::from_millis(10),
        Duration::from_millis(10),
        1.0,
        &[Code::Unavailable],
    )
    .unwrap()
}

struct Chunks {
    left: Vec<Bytes>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.left.is_empty() {
            return Poll::Ready(None);
        }
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(5))));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sleep = None;
        let chunk = self.left.remove(0);
        Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
    }
}

mod hedge_stops;
mod left_behind;
mod replay_cap;
mod transport;
