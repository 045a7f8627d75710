//! Quick start: charging a card over real HTTP, retried until it goes through, and charged once.
//!
//! The program starts a payment service on `127.0.0.1` (port 0) whose first three answers to the
//! charge go wrong: it charges the card and then loses the response, then a 503 (a deploy), then
//! a 429 asking to retry after a second. The client is one `#[retryable]` method over reqwest,
//! sending the call's `reattempt::context()` idempotency key as `Idempotency-Key`, so the fourth
//! attempt gets the first charge back instead of charging again. A second order with an invalid
//! amount gets a 400, which is not retried.
//!
//! Run it with `cargo run --example quickstart` (about two seconds; no setup). Add
//! `RUST_LOG=reattempt=debug` to see the library's own event for each retry.
//!
//! To copy it into your own crate (the service is `reattempt::testing::http::Service`, feature
//! `testing`: under `[dev-dependencies]` if only your tests and examples use it; `http` is a
//! default feature):
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["testing-http"] }
//! reqwest = { version = "0.13", features = ["json"] }
//! serde = { version = "1", features = ["derive"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "time"] }
//! tracing-subscriber = { version = "0.3", features = ["env-filter"] }
//! ```

use std::fmt;
use std::time::Duration;

use reattempt::testing::http::{Fault, RetryAfter, Service};
use reattempt::{RetryContext, retryable};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Serialize)]
struct Charge<'a> {
    order_id: &'a str,
    amount_cents: i64,
}

#[derive(Debug, Deserialize)]
struct Receipt {
    charge_id: String,
    order_id: String,
    amount_cents: i64,
    /// Set when the service answered from its idempotency store (`Idempotent-Replayed: true`).
    #[serde(skip)]
    replayed: bool,
}

/// The body of a 4xx answer.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: String,
}

/// Everything a charge can end in, as the retry rules need to tell it apart.
#[derive(Debug)]
enum PayError {
    /// The attempt ran past its timeout (the answer may have been lost): retried.
    Timeout,
    /// 503: retried.
    Unavailable,
    /// 429: retried, after the delay the server asks for.
    TooManyRequests { retry_after: Option<Duration> },
    /// The connection failed (refused, reset): retried.
    Network(reqwest::Error),
    /// 400: the request itself is wrong; retrying cannot help.
    Rejected(String),
    /// Any other status.
    Unexpected(StatusCode),
}

impl PayError {
    /// The server's hint, for `retry_after = …`.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            PayError::TooManyRequests { retry_after } => *retry_after,
            _ => None,
        }
    }
}

impl From<reattempt::Elapsed> for PayError {
    fn from(_: reattempt::Elapsed) -> Self {
        PayError::Timeout
    }
}

impl From<reqwest::Error> for PayError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            PayError::Timeout
        } else {
            PayError::Network(e)
        }
    }
}

impl fmt::Display for PayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayError::Timeout => f.write_str("no answer within the timeout"),
            PayError::Unavailable => f.write_str("503 Service Unavailable"),
            PayError::TooManyRequests {
                retry_after: Some(d),
            } => write!(f, "429 Too Many Requests, Retry-After {d:?}"),
            PayError::TooManyRequests { retry_after: None } => f.write_str("429 Too Many Requests"),
            PayError::Network(e) => write!(f, "network error: {e}"),
            PayError::Rejected(why) => write!(f, "400 Bad Request: {why}"),
            PayError::Unexpected(status) => write!(f, "unexpected {status}"),
        }
    }
}

struct Payments {
    http: reqwest::Client,
    base: String,
    started: Instant,
}

impl Payments {
    /// Four attempts at most, 100 ms then 200 ms then 400 ms apart (full jitter) unless the
    /// server asks for longer, each cut after 500 ms; 400s are not retried. A timed-out charge
    /// may have gone through: retrying it (`PayError::Timeout` in `retry_on`) is safe only
    /// because every attempt sends the call's `Idempotency-Key`.
    #[retryable(max_attempts = 4, delay = "100ms", multiplier = 2, max_delay = "2s",
                jitter = "full", timeout = "500ms",
                retry_on = [PayError::Timeout | PayError::Unavailable
                            | PayError::TooManyRequests { .. } | PayError::Network(_)],
                retry_after = PayError::retry_after,
                on_retry = |e, ctx, delay| self.report_retry(e, ctx, delay))]
    async fn charge(&self, order_id: &str, amount_cents: i64) -> Result<Receipt, PayError> {
        let ctx = reattempt::context().expect("inside an attempt");
        let key = ctx.idempotency_key().to_string(); // the same on every attempt of this call
        println!(
            "  {:>6}  attempt {}/{}  POST /charges  Idempotency-Key: {key}",
            self.clock(),
            ctx.attempt(),
            ctx.max_attempts()
        );
        let response = self
            .http
            .post(format!("{}/charges", self.base))
            .header("Idempotency-Key", key)
            .json(&Charge {
                order_id,
                amount_cents,
            })
            .send()
            .await?;
        match response.status() {
            status if status.is_success() => {
                let replayed = response.headers().contains_key("idempotent-replayed");
                let receipt: Receipt = response.json().await?;
                Ok(Receipt {
                    replayed,
                    ..receipt
                })
            }
            StatusCode::SERVICE_UNAVAILABLE => Err(PayError::Unavailable),
            StatusCode::TOO_MANY_REQUESTS => Err(PayError::TooManyRequests {
                retry_after: reattempt::http::retry_after(response.headers()),
            }),
            StatusCode::BAD_REQUEST => Err(PayError::Rejected(
                response.json::<ErrorBody>().await?.error,
            )),
            status => Err(PayError::Unexpected(status)),
        }
    }

    fn report_retry(&self, err: &PayError, ctx: &RetryContext, delay: Duration) {
        let why = if err.retry_after().is_some() {
            " (the server's Retry-After)"
        } else {
            ""
        };
        println!(
            "  {:>6}  attempt {} failed: {err}; retrying in {}ms{why}",
            self.clock(),
            ctx.attempt(),
            delay.as_millis()
        );
    }

    fn clock(&self) -> String {
        format!("{}ms", self.started.elapsed().as_millis())
    }
}

#[tokio::main]
async fn main() {
    // `RUST_LOG=reattempt=debug` shows the library's event for each retry.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let service = Service::start().await;
    service.narrate(true);
    let payments = Payments {
        // Straight to loopback: no proxy from the environment.
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client"),
        base: service.url(),
        started: Instant::now(),
    };

    println!(
        "1. Charge order-1 ($12.50) through {}: a lost response, a 503 and a 429 on the way",
        service.url()
    );
    service.script_for(
        "order-1",
        [
            Fault::LoseResponse,
            Fault::Unavailable,
            Fault::RateLimited(RetryAfter::Seconds(1)),
        ],
    );
    let result = payments.charge("order-1", 1250).await;
    println!("  {:>6}  result: {result:?}", payments.clock());
    let receipt = result.expect("the charge went through");
    let charges = service.effects("order-1");
    println!(
        "          {} for {}, {}¢{}; the card was charged {charges} time",
        receipt.charge_id,
        receipt.order_id,
        receipt.amount_cents,
        if receipt.replayed {
            " (the first attempt's charge, replayed)"
        } else {
            ""
        }
    );
    println!();
    assert_eq!(charges, 1, "charged exactly once");

    println!("2. Charge order-2 with an invalid amount: a 400 is not retried");
    let result = payments.charge("order-2", -5).await;
    println!("  {:>6}  result: {result:?}", payments.clock());
    println!(
        "          requests for order-2: {}, charges: {}",
        service.seen_for("order-2").len(),
        service.effects("order-2")
    );
    assert!(matches!(result, Err(PayError::Rejected(_))));
    assert_eq!(service.seen_for("order-2").len(), 1, "one request");
}
