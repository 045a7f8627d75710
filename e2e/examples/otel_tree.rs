//! The OpenTelemetry trace of a call given up after two retries, printed as a tree: the spans
//! of the feature `spans`, exported through `tracing-opentelemetry` into the OpenTelemetry SDK's
//! in-memory exporter, each with its kind, status and attributes.
//!
//! ```text
//! cargo run -p reattempt-e2e --example otel_tree --features spans
//! ```
//!
//! prints (tracing-opentelemetry's own attributes left out: source location, thread, times):
//!
//! ```text
//! checkout  kind=Internal status=Unset
//! └── charge  kind=Internal status=Error  error.type=std::io::error::Error reattempt.attempts=3 reattempt.give_up_reason=attempts exhausted reattempt.name=charge
//!     ├── attempt  kind=Internal status=Error  error.type=std::io::error::Error reattempt.attempt=1 reattempt.class=transient reattempt.hedge=false
//!     ├── backoff  kind=Internal status=Unset  reattempt.delay_ms=100
//!     ├── attempt  kind=Internal status=Error  error.type=std::io::error::Error reattempt.attempt=2 reattempt.class=transient reattempt.hedge=false
//!     ├── backoff  kind=Internal status=Unset  reattempt.delay_ms=200
//!     └── attempt  kind=Internal status=Error  error.type=std::io::error::Error reattempt.attempt=3 reattempt.class=transient reattempt.hedge=false
//! ```
//!
//! To copy it into your own crate:
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["spans"] }
//! tokio = { version = "1", features = ["macros", "rt", "time"] }
//! tracing = "0.1"
//! tracing-subscriber = "0.3"
//! tracing-opentelemetry = "0.34"
//! opentelemetry = "0.33"
//! opentelemetry_sdk = { version = "0.33", features = ["testing"] }
//! ```

use std::io;

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Instrument;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;

/// A payment service that resets every connection.
#[reattempt::retryable(max_attempts = 3, delay = "100ms", jitter = "none", name = "charge")]
async fn charge(_order: u64) -> Result<(), io::Error> {
    Err(io::ErrorKind::ConnectionReset.into())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    // The pipeline a service sets up (with its own exporter: OTLP, stdout, …).
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("otel_tree"))
        // Only the crate's spans and this example's (not the runtime's).
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            meta.target() == "reattempt" || meta.target() == "otel_tree"
        }));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel))
        .expect("the only subscriber");

    let out = charge(42).instrument(tracing::info_span!("checkout")).await;
    assert!(out.is_err(), "given up after three attempts");

    provider.force_flush().expect("flushed");
    let spans = exporter.get_finished_spans().expect("exported");
    // The roots: spans whose parent was not exported (the invalid id: none).
    let ids: Vec<SpanId> = spans.iter().map(|s| s.span_context.span_id()).collect();
    for root in spans.iter().filter(|s| !ids.contains(&s.parent_span_id)) {
        print_tree(&spans, root, "", "");
    }
}

/// Prints `span` and (in the order they ended: each attempt, then the sleep before the next)
/// its children.
fn print_tree(spans: &[SpanData], span: &SpanData, lead: &str, indent: &str) {
    let mut attributes: Vec<String> = span
        .attributes
        .iter()
        // tracing-opentelemetry's own (source location, thread, target, busy and idle times).
        .filter(|kv| {
            let key = kv.key.as_str();
            !key.starts_with("code.")
                && !key.starts_with("thread.")
                && !["target", "busy_ns", "idle_ns"].contains(&key)
        })
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    attributes.sort();
    let status = match &span.status {
        opentelemetry::trace::Status::Error { .. } => "Error",
        opentelemetry::trace::Status::Ok => "Ok",
        opentelemetry::trace::Status::Unset => "Unset",
    };
    let line = format!(
        "{lead}{}  kind={:?} status={status}  {}",
        span.name,
        span.span_kind,
        attributes.join(" ")
    );
    println!("{}", line.trim_end());
    let id = span.span_context.span_id();
    let children: Vec<&SpanData> = spans.iter().filter(|s| s.parent_span_id == id).collect();
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        print_tree(
            spans,
            child,
            &format!("{indent}{branch}"),
            &format!("{indent}{next}"),
        );
    }
}
