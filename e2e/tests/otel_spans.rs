//! The trace of a retried call as an OpenTelemetry user exports it: `tracing-opentelemetry`
//! over the spans of the feature `spans`, into the OpenTelemetry SDK's in-memory exporter, for a
//! call given up after two retries through the attribute (`#[retryable]`), the tower layer's
//! `.http()` over a `tower::service_fn`, the gRPC layer over a tonic-health server on loopback,
//! and the reqwest middleware over an axum server; and a gRPC call answered, and one answered
//! through a transparent retry (gRFC A6) of a refused stream. Checked: the tree by span id (the call a child of the caller's span, the attempts
//! and the sleeps children of the call), the exported names (`otel.name`), kinds, statuses
//! (`otel.status_code`), each attempt's attributes (the crate's, OpenTelemetry's HTTP and RPC
//! conventions', gRFC A72's) and the sleeps' delays.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::time::Duration;

use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use reattempt::RetryPolicy;
use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
use reattempt::tower::RetryLayer;
use tonic::Code;
use tonic::codegen::tokio_stream::{self, Stream};
use tonic::transport::{Endpoint, Server};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::{Layer, ServiceExt, service_fn};
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;

/// A span as exported, its attributes as text.
#[derive(Debug)]
struct Exported {
    name: String,
    id: SpanId,
    parent: SpanId,
    kind: SpanKind,
    status: Status,
    attributes: HashMap<String, String>,
}

impl Exported {
    fn new(span: SpanData) -> Self {
        Exported {
            name: span.name.into_owned(),
            id: span.span_context.span_id(),
            parent: span.parent_span_id,
            kind: span.span_kind,
            status: span.status,
            attributes: span
                .attributes
                .into_iter()
                .map(|kv| (kv.key.as_str().to_owned(), kv.value.as_str().into_owned()))
                .collect(),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    fn attr(&self, key: &str) -> &str {
        self.get(key)
            .unwrap_or_else(|| panic!("{} has no {key}: {:?}", self.name, self.attributes))
    }
}

/// An OpenTelemetry pipeline as a user sets one up (tracing-opentelemetry over the SDK), into
/// the in-memory exporter; the crate's spans and the test's own only (not h2's, hyper's, tonic's).
struct Pipeline {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: DefaultGuard,
}

impl Pipeline {
    fn install() -> Pipeline {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let otel = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("otel_spans"))
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.target() == "reattempt" || meta.target() == "otel_spans"
            }));
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(otel));
        Pipeline {
            exporter,
            provider,
            _guard: guard,
        }
    }

    /// The spans exported so far, in the order they ended.
    fn spans(&self) -> Vec<Exported> {
        self.provider.force_flush().unwrap();
        self.exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .map(Exported::new)
            .collect()
    }
}

/// The tree of a call made inside the test's `request` span and given up after three attempts:
/// `request` → the call (named `call`) → attempt, backoff, attempt, backoff, attempt, in that
/// order. Returns the call and its children.
fn given_up_tree<'a>(spans: &'a [Exported], call: &str) -> (&'a Exported, Vec<&'a Exported>) {
    let request = spans
        .iter()
        .find(|s| s.name == "request")
        .expect("the caller's span");
    let calls: Vec<&Exported> = spans.iter().filter(|s| s.parent == request.id).collect();
    assert_eq!(
        calls.len(),
        1,
        "one call under the caller's span: {spans:#?}"
    );
    let the_call = calls[0];
    assert_eq!(the_call.name, call, "otel.name is the exported name");
    // Children in the order they ended: each attempt, then the sleep before the next.
    let children: Vec<&Exported> = spans.iter().filter(|s| s.parent == the_call.id).collect();
    let names: Vec<&str> = children.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["attempt", "backoff", "attempt", "backoff", "attempt"]
    );
    assert_eq!(
        spans.len(),
        children.len() + 2,
        "nothing else: {:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    // The crate's own attributes, the same through every driver.
    assert_eq!(the_call.kind, SpanKind::Internal);
    assert!(
        matches!(the_call.status, Status::Error { .. }),
        "{:?}",
        the_call.status
    );
    assert_eq!(the_call.attr("reattempt.name"), call);
    assert_eq!(the_call.attr("reattempt.attempts"), "3");
    assert_eq!(
        the_call.attr("reattempt.give_up_reason"),
        "attempts exhausted"
    );
    let attempts: Vec<&Exported> = children
        .iter()
        .copied()
        .filter(|s| s.name == "attempt")
        .collect();
    for (attempt, n) in attempts.iter().zip(1..) {
        assert_eq!(attempt.kind, SpanKind::Internal);
        assert!(matches!(attempt.status, Status::Error { .. }));
        assert_eq!(attempt.attr("reattempt.attempt"), n.to_string());
        assert_eq!(attempt.attr("reattempt.hedge"), "false");
        assert_eq!(attempt.attr("reattempt.class"), "transient");
        assert_eq!(attempt.attr("error.type"), the_call.attr("error.type"));
    }
    for backoff in children.iter().filter(|s| s.name == "backoff") {
        assert_eq!(backoff.kind, SpanKind::Internal);
        assert_eq!(backoff.status, Status::Unset);
    }
    (the_call, attempts)
}

fn delays(spans: &[Exported]) -> Vec<&str> {
    spans
        .iter()
        .filter(|s| s.name == "backoff")
        .map(|s| s.attr("reattempt.delay_ms"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// (a) The attribute.

#[reattempt::retryable(max_attempts = 3, delay = "100ms", jitter = "none", name = "charge")]
async fn charge() -> Result<(), io::Error> {
    Err(io::ErrorKind::ConnectionReset.into())
}

#[tokio::test(start_paused = true)]
async fn the_attribute_exports_the_call_its_attempts_and_its_sleeps() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    let out = charge().instrument(tracing::info_span!("request")).await;
    assert!(out.is_err());
    let spans = pipeline.spans();
    let (call, attempts) = given_up_tree(&spans, "charge");
    assert_eq!(call.attr("error.type"), "std::io::error::Error");
    assert_eq!(delays(&spans), ["100", "200"]);
    // No protocol's attributes where the attribute knows none.
    for attempt in attempts {
        assert_eq!(attempt.get("http.request.resend_count"), None);
        assert_eq!(attempt.get("previous-rpc-attempts"), None);
    }
}

// ---------------------------------------------------------------------------------------------
// (b) The tower layer's `.http()`.

#[tokio::test(start_paused = true)]
async fn the_tower_layer_exports_http_attributes_and_resend_counts() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(50))
        .jitter(reattempt::Jitter::None)
        .build()
        .unwrap();
    let service = service_fn(|_: http::Request<String>| async {
        Ok::<_, io::Error>(
            http::Response::builder()
                .status(503)
                .body(String::new())
                .unwrap(),
        )
    });
    let service = RetryLayer::new(policy).http().name("orders").layer(service);
    let request = http::Request::get("http://api.test:8080/orders?token=secret")
        .body(String::new())
        .unwrap();
    let response = service
        .oneshot(request)
        .instrument(tracing::info_span!("request"))
        .await
        .unwrap();
    assert_eq!(response.status(), 503, "the last answer, given up on");
    let spans = pipeline.spans();
    let (call, attempts) = given_up_tree(&spans, "orders");
    assert_eq!(call.attr("http.request.method"), "GET");
    assert_eq!(call.attr("server.address"), "api.test");
    assert_eq!(call.attr("server.port"), "8080");
    assert!(
        spans
            .iter()
            .all(|s| s.attributes.values().all(|v| !v.contains("secret"))),
        "never the URL's query"
    );
    let resends: Vec<Option<&str>> = attempts
        .iter()
        .map(|a| a.get("http.request.resend_count"))
        .collect();
    assert_eq!(resends, [None, Some("1"), Some("2")], "only on a resend");
    for attempt in &attempts {
        assert_eq!(attempt.attr("http.response.status_code"), "503");
    }
    assert_eq!(delays(&spans), ["50", "100"]);
}

// ---------------------------------------------------------------------------------------------
// (c) The gRPC layer.

/// A health service that answers UNAVAILABLE `failures` times, then SERVING.
struct Flaky {
    failures: usize,
    calls: std::sync::atomic::AtomicUsize,
}

#[tonic::async_trait]
impl Health for Flaky {
    async fn check(
        &self,
        _: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<HealthCheckResponse>, tonic::Status> {
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n < self.failures {
            return Err(tonic::Status::unavailable("scripted"));
        }
        Ok(tonic::Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream =
        Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, tonic::Status>> + Send>>;

    async fn watch(
        &self,
        _: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<Self::WatchStream>, tonic::Status> {
        Ok(tonic::Response::new(Box::pin(tokio_stream::empty())))
    }
}

/// A client over the gRPC layer (3 attempts, UNAVAILABLE retried) to a [`Flaky`] server on
/// loopback that fails `failures` times.
async fn grpc_client(
    failures: usize,
) -> HealthClient<reattempt::tonic::GrpcRetryService<tonic::transport::Channel>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
    let service = HealthServer::new(Flaky {
        failures,
        calls: 0.into(),
    });
    tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    let policy = GrpcRetryPolicy::new(
        3,
        Duration::from_millis(10),
        Duration::from_millis(10),
        1.0,
        &[Code::Unavailable],
    )
    .unwrap();
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    HealthClient::new(GrpcRetryLayer::new(policy).name("health").layer(channel))
}

const CHECK: &str = "/grpc.health.v1.Health/Check";

#[tokio::test]
async fn the_grpc_layer_exports_rpc_attributes_and_a72s_attempt_attributes() {
    use tracing::Instrument;
    let mut client = grpc_client(usize::MAX).await;
    let pipeline = Pipeline::install();
    let status = client
        .check(HealthCheckRequest::default())
        .instrument(tracing::info_span!("request"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    let spans = pipeline.spans();
    let (call, attempts) = given_up_tree(&spans, "health");
    assert_eq!(call.attr("rpc.system"), "grpc");
    assert_eq!(call.attr("rpc.method"), CHECK);
    assert_eq!(call.attr("rpc.grpc.status_code"), "14", "UNAVAILABLE");
    assert_eq!(call.attr("error.type"), "tonic::status::Status");
    let previous: Vec<&str> = attempts
        .iter()
        .map(|a| a.attr("previous-rpc-attempts"))
        .collect();
    assert_eq!(previous, ["0", "1", "2"]);
    for attempt in &attempts {
        assert_eq!(attempt.attr("transparent-retry"), "false");
        assert_eq!(attempt.attr("rpc.grpc.status_code"), "14");
    }
    // The gRPC layer's backoff is the policy's (10 ms here) × random(0.8, 1.2).
    let delays = delays(&spans);
    assert_eq!(delays.len(), 2);
    assert!(
        delays
            .iter()
            .all(|d| (8..=12).contains(&d.parse::<u64>().unwrap())),
        "{delays:?}"
    );
}

#[tokio::test]
async fn a_grpc_call_answered_on_its_third_attempt_ends_ok() {
    use tracing::Instrument;
    let mut client = grpc_client(2).await;
    let pipeline = Pipeline::install();
    let reply = client
        .check(HealthCheckRequest::default())
        .instrument(tracing::info_span!("request"))
        .await
        .unwrap();
    assert_eq!(reply.get_ref().status(), ServingStatus::Serving);
    let spans = pipeline.spans();
    let call = spans.iter().find(|s| s.name == "health").unwrap();
    assert_eq!(call.status, Status::Unset, "not an error");
    assert_eq!(call.attr("rpc.grpc.status_code"), "0", "OK");
    assert_eq!(call.get("error.type"), None);
    let codes: Vec<&str> = spans
        .iter()
        .filter(|s| s.name == "attempt")
        .map(|s| s.attr("rpc.grpc.status_code"))
        .collect();
    assert_eq!(codes, ["14", "14", "0"]);
    let last = spans.iter().rfind(|s| s.name == "attempt").unwrap();
    assert_eq!(last.status, Status::Unset);
    assert_eq!(last.attr("previous-rpc-attempts"), "2");
}

/// A raw HTTP/2 server that refuses its first stream (`REFUSED_STREAM`) and answers the others
/// `SERVING`, as `tests/grpc_transparent.rs`'s does.
async fn refusing_once() -> std::net::SocketAddr {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let streams = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let streams = Arc::clone(&streams);
            tokio::spawn(async move {
                let mut connection = h2::server::handshake(socket).await.unwrap();
                while let Some(Ok((request, mut respond))) = connection.accept().await {
                    if streams.fetch_add(1, Ordering::SeqCst) == 0 {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    tokio::spawn(async move {
                        let mut body = request.into_body();
                        while let Some(chunk) = body.data().await {
                            let chunk = chunk.unwrap();
                            let _ = body.flow_control().release_capacity(chunk.len());
                        }
                        let response = http::Response::builder()
                            .header("content-type", "application/grpc")
                            .body(())
                            .unwrap();
                        let mut send = respond.send_response(response, false).unwrap();
                        // HealthCheckResponse { status: SERVING (1) }.
                        let message = bytes::Bytes::from_static(&[0, 0, 0, 0, 2, 0x08, 0x01]);
                        send.send_data(message, false).unwrap();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        send.send_trailers(trailers).unwrap();
                    });
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_transparent_retry_marks_its_attempt() {
    let addr = refusing_once().await;
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    let layer = GrpcRetryLayer::new(
        GrpcRetryPolicy::new(
            3,
            Duration::from_millis(10),
            Duration::from_millis(10),
            1.0,
            &[Code::Unavailable],
        )
        .unwrap(),
    );
    let mut client = HealthClient::new(layer.name("health").layer(channel));
    let pipeline = Pipeline::install();
    let reply = client.check(HealthCheckRequest::default()).await.unwrap();
    assert_eq!(reply.get_ref().status(), ServingStatus::Serving);
    let spans = pipeline.spans();
    let attempts: Vec<&Exported> = spans.iter().filter(|s| s.name == "attempt").collect();
    assert_eq!(
        attempts.len(),
        1,
        "the resend is not an attempt of the policy"
    );
    assert_eq!(attempts[0].attr("transparent-retry"), "true");
    assert_eq!(attempts[0].attr("previous-rpc-attempts"), "0");
    assert_eq!(attempts[0].attr("rpc.grpc.status_code"), "0");
    let call = spans.iter().find(|s| s.name == "health").unwrap();
    assert_eq!(call.attr("rpc.grpc.status_code"), "0");
    assert_eq!(call.status, Status::Unset);
}

// ---------------------------------------------------------------------------------------------
// The reqwest middleware.

#[tokio::test]
async fn the_reqwest_middleware_exports_http_attributes_and_resend_counts() {
    use tracing::Instrument;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route(
        "/orders",
        axum::routing::get(|| async { http::StatusCode::SERVICE_UNAVAILABLE }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(5))
        .jitter(reattempt::Jitter::None)
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(reattempt::reqwest_middleware::RetryMiddleware::new(policy).name("orders"))
        .build();
    let pipeline = Pipeline::install();
    let response = client
        .get(format!("http://127.0.0.1:{port}/orders?token=secret"))
        .send()
        .instrument(tracing::info_span!("request"))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let spans = pipeline.spans();
    let (call, attempts) = given_up_tree(&spans, "orders");
    assert_eq!(call.attr("http.request.method"), "GET");
    assert_eq!(call.attr("server.address"), "127.0.0.1");
    assert_eq!(call.attr("server.port"), port.to_string());
    assert!(
        spans
            .iter()
            .all(|s| s.attributes.values().all(|v| !v.contains("secret"))),
        "never the URL's query"
    );
    let resends: Vec<Option<&str>> = attempts
        .iter()
        .map(|a| a.get("http.request.resend_count"))
        .collect();
    assert_eq!(resends, [None, Some("1"), Some("2")]);
    for attempt in &attempts {
        assert_eq!(attempt.attr("http.response.status_code"), "503");
    }
    assert_eq!(delays(&spans), ["5", "10"]);
}
