//! A hyper-util HTTP client wrapped in reattempt's tower layer, charging a card through the
//! fault-injecting service: the first attempt meets a 503, the second a 429 with
//! `Retry-After: 1`, the third goes through; one `Idempotency-Key` for all three, one charge.
//!
//! `cargo run --example tower --features tower`
//!
//! To copy it into your own crate (the service is `reattempt::testing::http::Service`, feature
//! `testing`: under `[dev-dependencies]` if only your tests and examples use it; `http` is a
//! default feature):
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["tower", "testing-http"] }
//! bytes = "1"
//! http = "1"
//! http-body-util = "0.1"
//! hyper-util = { version = "0.1", features = ["client-legacy", "http1", "tokio"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! tower = { version = "0.5", features = ["util"] }
//! ```

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::testing::http::{Fault, RetryAfter, Service};
use reattempt::tower::RetryLayer;
use reattempt::{Jitter, RetryPolicy};
use tower::{BoxError, ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let service = Service::start().await;
    service.script_for(
        "o-42",
        [
            Fault::Unavailable,
            Fault::RateLimited(RetryAfter::Seconds(1)),
        ],
    );

    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .delay(Duration::from_millis(100))
        .jitter(Jitter::Full)
        .timeout(Duration::from_secs(2))
        .max_elapsed(Duration::from_secs(10))
        .build()?;
    let client = ServiceBuilder::new()
        .layer(
            RetryLayer::new(policy)
                .http() // transient statuses, Retry-After, a copy of the request per attempt
                .idempotency_key_header()
                // Called before a retry after an error (a reset, a timeout); a retried
                // response (503, 429) shows in the `reattempt` tracing events. (Inside
                // `tokio::spawn`, a closure naming `BoxError` does not compile: see the HTTP
                // chapter, "tower: RetryLayer".)
                .on_retry(|e: &BoxError, ctx: &reattempt::RetryContext, d| {
                    println!("attempt {} failed ({e}); retrying in {d:?}", ctx.attempt());
                })
                .name("charge"),
        )
        .map_err(BoxError::from) // a timed-out attempt becomes an error too
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());

    let request = Request::post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"order_id":"o-42","amount_cents":1250}"#,
        )))?;
    let response = client.oneshot(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    println!("{status}: {}", String::from_utf8_lossy(&body));
    for seen in service.seen_for("o-42") {
        println!("  the service saw: {} key={:?}", seen.fault, seen.key);
    }
    println!("charges for o-42: {}", service.effects("o-42"));
    assert_eq!(service.effects("o-42"), 1);
    Ok(())
}
