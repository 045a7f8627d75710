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

/// A call named `orders` to `uri` through the tower layer's `.http()`, answered 503 at each of
/// its `max_attempts` attempts (no jitter, 50 ms delays), inside a `request` span: the spans
/// exported, and the response the call gave up with.
async fn orders_answered_503(max_attempts: u32, uri: &str) -> (Vec<Exported>, http::StatusCode) {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    let policy = RetryPolicy::builder()
        .max_attempts(max_attempts)
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
    let request = http::Request::get(uri).body(String::new()).unwrap();
    let response = service
        .oneshot(request)
        .instrument(tracing::info_span!("request"))
        .await
        .unwrap();
    (pipeline.spans(), response.status())
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_exports_http_attributes_and_resend_counts() {
    let (spans, status) = orders_answered_503(3, "http://api.test:8080/orders?token=secret").await;
    assert_eq!(status, 503, "the last answer, given up on");
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
    assert_eq!(call.attr("rpc.service"), "grpc.health.v1.Health");
    assert_eq!(call.attr("rpc.method"), "Check");
    assert_eq!(call.attr("rpc.grpc.status_code"), "14", "UNAVAILABLE");
    // A gRPC failure is told by its status's name, as the RPC conventions say.
    assert_eq!(call.attr("error.type"), "UNAVAILABLE");
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

// ---------------------------------------------------------------------------------------------
// Parents, statuses and notes as an OpenTelemetry user reads them, at the edges: a nested call, `#[recover]`, a call dropped, `join!`, hedged copies, a call without spans beside one with them, a panic, a blocking call.

static FLAKY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[reattempt::retryable(max_attempts = 3, delay = "10ms", jitter = "none", name = "flaky")]
async fn flaky() -> Result<u32, io::Error> {
    if FLAKY.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
        Err(io::ErrorKind::ConnectionReset.into())
    } else {
        Ok(7)
    }
}

#[reattempt::retryable(max_attempts = 2, delay = "10ms", jitter = "none", name = "inner")]
async fn inner_gives_up() -> Result<(), io::Error> {
    Err(io::ErrorKind::ConnectionReset.into())
}

#[reattempt::retryable(max_attempts = 2, delay = "10ms", jitter = "none", name = "outer")]
async fn outer_ok_after_inner_gave_up() -> Result<(), io::Error> {
    let _ = inner_gives_up().await;
    Ok(())
}

#[reattempt::retryable(max_attempts = 2, delay = "10ms", jitter = "none", name = "with_fallback", recover = fallback)]
async fn with_fallback() -> Result<(), io::Error> {
    Err(io::ErrorKind::ConnectionReset.into())
}

#[reattempt::recover]
async fn fallback(_err: io::Error) -> Result<(), io::Error> {
    inner_gives_up().await
}

fn named<'a>(spans: &'a [Exported], name: &str) -> Vec<&'a Exported> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test(start_paused = true)]
async fn a_success_after_retries_is_not_an_error() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    assert_eq!(
        flaky()
            .instrument(tracing::info_span!("request"))
            .await
            .unwrap(),
        7
    );
    let spans = pipeline.spans();
    let call = named(&spans, "flaky")[0];
    assert_eq!(call.status, Status::Unset, "{call:#?}");
    assert_eq!(call.attr("reattempt.attempts"), "3");
    assert_eq!(call.get("reattempt.give_up_reason"), None);
    let attempts = named(&spans, "attempt");
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts[2].status, Status::Unset);
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_is_the_attempts_child_and_its_give_up_is_its_own() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    outer_ok_after_inner_gave_up()
        .instrument(tracing::info_span!("request"))
        .await
        .unwrap();
    let spans = pipeline.spans();
    let outer = named(&spans, "outer")[0];
    let inner = named(&spans, "inner")[0];
    let outer_attempt = spans
        .iter()
        .find(|s| s.name == "attempt" && s.parent == outer.id)
        .expect("the outer call's attempt");
    assert_eq!(
        inner.parent, outer_attempt.id,
        "the inner call under the outer's attempt"
    );
    assert!(matches!(inner.status, Status::Error { .. }));
    assert_eq!(outer.status, Status::Unset, "{outer:#?}");
    assert_eq!(outer_attempt.status, Status::Unset, "{outer_attempt:#?}");
    assert_eq!(outer.get("reattempt.give_up_reason"), None);
}

#[tokio::test(start_paused = true)]
async fn a_call_made_in_recover_is_under_the_calls_span() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    assert!(
        with_fallback()
            .instrument(tracing::info_span!("request"))
            .await
            .is_err()
    );
    let spans = pipeline.spans();
    let call = named(&spans, "with_fallback")[0];
    let inner = named(&spans, "inner")[0];
    // spans.rs: "u32::MAX: the call's fallback, in the call's span"
    assert_eq!(
        inner.parent,
        call.id,
        "the fallback's call should be a child of the call whose fallback it is; \
         the call's span has already ended when the fallback runs: {:#?}",
        spans
            .iter()
            .map(|s| (&s.name, s.id, s.parent))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_sleep_closes_its_spans() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    let call = charge().instrument(tracing::info_span!("request"));
    // The first attempt fails, the sleep (100 ms) begins: drop the call in it.
    let _ = tokio::time::timeout(Duration::from_millis(50), call).await;
    let spans = pipeline.spans();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"charge"), "{names:?}");
    assert!(names.contains(&"backoff"), "{names:?}");
    assert_eq!(named(&spans, "attempt").len(), 1, "{names:?}");
}

#[tokio::test(start_paused = true)]
async fn two_calls_joined_on_one_task_keep_their_own_statuses() {
    use tracing::Instrument;
    let pipeline = Pipeline::install();
    FLAKY.store(0, std::sync::atomic::Ordering::SeqCst);
    let (a, b) = tokio::join!(
        charge().instrument(tracing::info_span!("request")),
        flaky().instrument(tracing::info_span!("request2"))
    );
    assert!(a.is_err());
    assert!(b.is_ok());
    let spans = pipeline.spans();
    let ok = named(&spans, "flaky")[0];
    let bad = named(&spans, "charge")[0];
    assert_eq!(ok.status, Status::Unset, "{ok:#?}");
    assert!(matches!(bad.status, Status::Error { .. }));
    assert_eq!(bad.attr("reattempt.give_up_reason"), "attempts exhausted");
    assert_eq!(ok.get("reattempt.give_up_reason"), None);
}

#[tokio::test(start_paused = true)]
async fn an_http_attempt_answered_503_has_the_status_as_its_error_type() {
    // OpenTelemetry's HTTP client conventions: "If response status code was sent or received and
    // status indicates an error according to HTTP span status definition, error.type SHOULD be
    // set to the status code number (represented as a string)".
    let (spans, _) = orders_answered_503(2, "http://api.test/orders").await;
    for span in spans
        .iter()
        .filter(|s| s.name == "attempt" || s.name == "orders")
    {
        assert_eq!(
            span.attr("error.type"),
            "503",
            "{}: {:?}",
            span.name,
            span.attributes
        );
    }
}

static HEDGED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[reattempt::retryable(
    max_attempts = 2,
    hedge_after = "20ms",
    idempotent = true,
    name = "hedged"
)]
async fn hedged() -> Result<u32, io::Error> {
    let n = HEDGED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // Each copy's own child span: it must be under that copy's attempt.
    let own = tracing::info_span!(target: "otel_spans", "work", copy = n).entered();
    drop(own);
    let span = tracing::info_span!(target: "otel_spans", "work_async", copy = n);
    async move {
        if n == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        } else {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(n)
    }
    .instrument(span)
    .await
}

use tracing::Instrument as _;

#[tokio::test(start_paused = true)]
async fn hedged_copies_are_attempts_side_by_side_each_with_its_children() {
    let pipeline = Pipeline::install();
    let won = hedged()
        .instrument(tracing::info_span!(target: "otel_spans", "request"))
        .await
        .unwrap();
    assert_eq!(won, 1, "the hedge answers first");
    let spans = pipeline.spans();
    let call = named(&spans, "hedged")[0];
    let attempts: Vec<&Exported> = spans.iter().filter(|s| s.name == "attempt").collect();
    assert_eq!(
        attempts.len(),
        2,
        "{:#?}",
        spans
            .iter()
            .map(|s| (&s.name, &s.attributes))
            .collect::<Vec<_>>()
    );
    assert!(attempts.iter().all(|a| a.parent == call.id));
    let by_number = |n: &str| {
        attempts
            .iter()
            .find(|a| a.attr("reattempt.attempt") == n)
            .unwrap()
    };
    assert_eq!(by_number("1").attr("reattempt.hedge"), "false");
    assert_eq!(by_number("2").attr("reattempt.hedge"), "true");
    for (copy, attempt) in [("0", "1"), ("1", "2")] {
        for kind in ["work", "work_async"] {
            let work = spans
                .iter()
                .find(|s| s.name == kind && s.attr("copy") == copy)
                .unwrap();
            assert_eq!(
                work.parent,
                by_number(attempt).id,
                "{kind} of copy {copy} under attempt {attempt}"
            );
        }
    }
    assert_eq!(call.status, Status::Unset);
    assert_eq!(call.attr("reattempt.attempts"), "2");
}

#[reattempt::retryable(max_attempts = 2, delay = "20ms", jitter = "none", name = "inner20")]
async fn inner_gives_up_at_20ms() -> Result<(), io::Error> {
    Err(io::ErrorKind::ConnectionReset.into())
}

static FLAKY2: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[reattempt::retryable(max_attempts = 3, delay = "10ms", jitter = "none", name = "flaky2")]
async fn flaky2() -> Result<u32, io::Error> {
    if FLAKY2.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
        Err(io::ErrorKind::ConnectionReset.into())
    } else {
        Ok(7)
    }
}

#[tokio::test(start_paused = true)]
async fn a_give_up_noted_by_a_call_without_spans_does_not_fail_another_calls_span() {
    // Two calls on one task: `flaky2` (traced; answers on its third attempt, t = 30 ms) and
    // `inner20` run with another dispatcher that wants no spans (gives up at t = 20 ms). The
    // give-up's thread-local note is never taken by `inner20` (no spans), and `flaky2`'s answer
    // takes it as its own.
    use tracing::instrument::WithSubscriber;
    let pipeline = Pipeline::install();
    let (a, b) = tokio::join!(
        flaky2().instrument(tracing::info_span!("request")),
        inner_gives_up_at_20ms().with_subscriber(tracing::subscriber::NoSubscriber::default())
    );
    assert_eq!(a.unwrap(), 7);
    assert!(b.is_err());
    let spans = pipeline.spans();
    let call = named(&spans, "flaky2")[0];
    assert_eq!(call.status, Status::Unset, "{call:#?}");
    assert_eq!(call.get("reattempt.give_up_reason"), None, "{call:#?}");
}

#[reattempt::retryable(max_attempts = 2, delay = "1ms", jitter = "none", name = "described")]
fn described_call() -> Result<u32, String> {
    Ok(1)
}

#[test]
fn a_recorder_installed_after_the_first_record_is_told_the_units_when_asked() {
    // The crate describes its metrics once per process, to the recorder current at its first
    // record; a recorder installed later hears them from `reattempt::describe_metrics()`.
    use metrics_util::debugging::DebuggingRecorder;
    let before = DebuggingRecorder::new();
    metrics::with_local_recorder(&before, || assert_eq!(described_call(), Ok(1)));
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        reattempt::describe_metrics();
        assert_eq!(described_call(), Ok(1));
    });
    let snapshot = snapshotter.snapshot().into_vec();
    let (_, unit, description, _) = snapshot
        .iter()
        .find(|(key, ..)| key.key().name() == "reattempt.calls")
        .expect("reattempt.calls recorded");
    assert_eq!(*unit, Some(metrics::Unit::Count));
    assert!(
        description.is_some(),
        "reattempt.calls without its description"
    );
}

#[tokio::test]
async fn rpc_method_is_a_value_some_rpc_convention_allows() {
    // OpenTelemetry's RPC conventions: up to v1.37, `rpc.service` = "grpc.health.v1.Health" and
    // `rpc.method` = "Check"; from the stable RPC conventions, `rpc.method` is the
    // fully-qualified "grpc.health.v1.Health/Check" (beside `rpc.system.name`). Neither has the
    // request path's leading '/'.
    use tracing::Instrument;
    let mut client = grpc_client(usize::MAX).await;
    let pipeline = Pipeline::install();
    let _ = client
        .check(HealthCheckRequest::default())
        .instrument(tracing::info_span!("request"))
        .await;
    let spans = pipeline.spans();
    let call = named(&spans, "health")[0];
    let method = call.attr("rpc.method");
    let old = method == "Check" && call.get("rpc.service") == Some("grpc.health.v1.Health");
    let new = method == "grpc.health.v1.Health/Check";
    assert!(
        old || new,
        "rpc.method = {method:?}, rpc.service = {:?}",
        call.get("rpc.service")
    );
}

#[reattempt::retryable(max_attempts = 2, delay = "10ms", jitter = "none", name = "panics")]
async fn panics() -> Result<(), io::Error> {
    panic!("inside the attempt")
}

#[tokio::test(start_paused = true)]
async fn a_panic_inside_an_attempt_leaves_no_span_entered() {
    use futures_util::FutureExt;
    let pipeline = Pipeline::install();
    let request = tracing::info_span!(target: "otel_spans", "request");
    let caught = std::panic::AssertUnwindSafe(panics().instrument(request.clone()))
        .catch_unwind()
        .await;
    assert!(caught.is_err());
    // Nothing the call entered is current any more.
    assert!(
        tracing::Span::current().is_none(),
        "{:?}",
        tracing::Span::current()
    );
    drop(tracing::info_span!(target: "otel_spans", "after"));
    drop(request);
    let spans = pipeline.spans();
    let after = named(&spans, "after")[0];
    assert_eq!(
        after.parent,
        SpanId::INVALID,
        "{:#?}",
        spans
            .iter()
            .map(|s| (&s.name, s.id, s.parent))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        named(&spans, "attempt").len(),
        1,
        "the attempt's span closed"
    );
}

#[reattempt::retryable(max_attempts = 2, delay = "1ms", jitter = "none", name = "sync_call")]
fn sync_call() -> Result<(), io::Error> {
    let _work = tracing::info_span!(target: "otel_spans", "sync_work").entered();
    Err(io::ErrorKind::ConnectionReset.into())
}

#[test]
fn a_blocking_calls_attempt_spans_hold_its_work() {
    let pipeline = Pipeline::install();
    let request = tracing::info_span!(target: "otel_spans", "request");
    assert!(request.in_scope(sync_call).is_err());
    drop(request);
    let spans = pipeline.spans();
    let call = named(&spans, "sync_call")[0];
    let attempts: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "attempt" && s.parent == call.id)
        .collect();
    assert_eq!(
        attempts.len(),
        2,
        "{:#?}",
        spans
            .iter()
            .map(|s| (&s.name, s.id, s.parent))
            .collect::<Vec<_>>()
    );
    for work in named(&spans, "sync_work") {
        assert!(
            attempts.iter().any(|a| a.id == work.parent),
            "sync_work under an attempt: {:#?}",
            spans
                .iter()
                .map(|s| (&s.name, s.id, s.parent))
                .collect::<Vec<_>>()
        );
    }
    assert!(matches!(call.status, Status::Error { .. }));
}
