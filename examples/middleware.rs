//! A reqwest-middleware client with reattempt's `RetryMiddleware`, charging a card through the
//! fault-injecting service: the first attempt's response is lost after the charge was made, the
//! second meets a 503, the third gets the stored answer back; one key, one charge.
//!
//! `cargo run --example middleware --features reqwest-middleware`
//!
//! To copy it into your own crate (the service is `reattempt::testing::http::Service`, feature
//! `testing`: under `[dev-dependencies]` if only your tests and examples use it; `http` is a
//! default feature):
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["reqwest-middleware", "testing-http"] }
//! reqwest = "0.13"
//! reqwest-middleware = "0.5"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```

use std::time::Duration;

use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::testing::http::{Fault, Service};
use reattempt::{Jitter, RetryPolicy};
use reqwest_middleware::ClientBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Service::start().await;
    service.script_for("o-7", [Fault::LoseResponse, Fault::Unavailable]);

    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .delay(Duration::from_millis(100))
        .jitter(Jitter::Full)
        .timeout(Duration::from_millis(500)) // a lost response ends the attempt here
        .build()?;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(policy)
                .idempotency_key_header()
                .name("charge"),
        )
        .build();

    let response = client
        .post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(r#"{"order_id":"o-7","amount_cents":990}"#)
        .send()
        .await?;
    println!("{}: {}", response.status(), response.text().await?);
    for seen in service.seen_for("o-7") {
        println!(
            "  the service saw: {} key={:?} -> {:?}",
            seen.fault, seen.key, seen.outcome
        );
    }
    println!("charges for o-7: {}", service.effects("o-7"));
    assert_eq!(service.effects("o-7"), 1);
    Ok(())
}
