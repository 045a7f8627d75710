//! Success-path cost of the gRPC layer (`reattempt::tonic::GrpcRetryLayer`) beside a bare tonic
//! call, in one run:
//! - `in-memory`: a tonic-health `HealthClient` over a service that answers `SERVING` at once
//!   (no network), bare and through the layer: the layer's own cost, with tonic's encoding and
//!   decoding on both sides;
//! - `loopback`: the same client over a real `Channel` to a tonic-health server on 127.0.0.1,
//!   bare and through the layer: what the layer adds to a real call.
//!
//! Then allocations per call (a counting allocator), printed.
//!
//! `cargo bench -p reattempt-bench --bench grpc --features reattempt/tonic`

use std::alloc::{GlobalAlloc, Layout, System};
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
use tonic::Code;
use tonic::body::Body;
use tonic::transport::{Endpoint, Server};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::{Layer, Service};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Answers every call `SERVING`, as a gRPC server's response with headers, a message and
/// trailers, without a network.
#[derive(Clone, Copy)]
struct Serving;

impl Service<http::Request<Body>> for Serving {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        let response = http::Response::builder()
            .header("content-type", "application/grpc")
            .body(Body::new(Reply { sent: 0 }))
            .unwrap();
        ready(Ok(response))
    }
}

/// A gRPC reply's body: one message, then the trailers.
struct Reply {
    sent: u8,
}

impl http_body::Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        self.sent += 1;
        Poll::Ready(match self.sent {
            // HealthCheckResponse { status: SERVING }: field 1, varint 1, in a gRPC frame.
            1 => Some(Ok(http_body::Frame::data(Bytes::from_static(&[
                0, 0, 0, 0, 2, 0x08, 0x01,
            ])))),
            2 => {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                Some(Ok(http_body::Frame::trailers(trailers)))
            }
            _ => None,
        })
    }
}

fn policy() -> GrpcRetryPolicy {
    GrpcRetryPolicy::new(
        4,
        Duration::from_millis(100),
        Duration::from_secs(1),
        2.0,
        &[Code::Unavailable],
    )
    .unwrap()
}

fn grpc(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // In memory.
    let mut bare = HealthClient::new(Serving);
    let mut layered = HealthClient::new(GrpcRetryLayer::new(policy()).layer(Serving));
    let mut group = c.benchmark_group("grpc/in-memory");
    group.bench_function("bare tonic", |b| {
        b.iter(|| {
            runtime
                .block_on(bare.check(HealthCheckRequest::default()))
                .unwrap()
        });
    });
    group.bench_function("GrpcRetryLayer", |b| {
        b.iter(|| {
            runtime
                .block_on(layered.check(HealthCheckRequest::default()))
                .unwrap()
        });
    });
    group.finish();

    // Loopback: a tonic-health server on this runtime.
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (reporter, health) = tonic_health::server::health_reporter();
        reporter
            .set_service_status("", tonic_health::ServingStatus::Serving)
            .await;
        let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(
            Server::builder()
                .add_service(health)
                .serve_with_incoming(incoming),
        );
        addr
    });
    let channel = runtime.block_on(async {
        Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap()
    });
    let mut bare_net = HealthClient::new(channel.clone());
    let mut layered_net = HealthClient::new(GrpcRetryLayer::new(policy()).layer(channel));
    let mut group = c.benchmark_group("grpc/loopback");
    group.bench_function("bare tonic", |b| {
        b.iter(|| {
            runtime
                .block_on(bare_net.check(HealthCheckRequest::default()))
                .unwrap()
        });
    });
    group.bench_function("GrpcRetryLayer", |b| {
        b.iter(|| {
            runtime
                .block_on(layered_net.check(HealthCheckRequest::default()))
                .unwrap()
        });
    });
    group.finish();

    // Allocations per call, in memory.
    let calls = 10_000;
    let count = |client: &mut dyn FnMut()| {
        let before = ALLOCS.load(Relaxed);
        for _ in 0..calls {
            client();
        }
        let allocs = u32::try_from(ALLOCS.load(Relaxed) - before).unwrap_or(u32::MAX);
        f64::from(allocs) / f64::from(calls)
    };
    let bare_allocs = count(&mut || {
        runtime
            .block_on(bare.check(HealthCheckRequest::default()))
            .unwrap();
    });
    let layered_allocs = count(&mut || {
        runtime
            .block_on(layered.check(HealthCheckRequest::default()))
            .unwrap();
    });
    println!(
        "allocations per call, in memory: bare tonic {bare_allocs:.1}, GrpcRetryLayer {layered_allocs:.1}"
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = grpc
}
criterion_main!(benches);
