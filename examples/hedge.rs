//! Hedging: a price lookup and a charge against a replica that sometimes stalls.
//!
//! The program starts a payment service on `127.0.0.1` (port 0). The client's methods carry
//! `#[retryable(hedge_after = "150ms", idempotent = true)]`: when an attempt has not answered within 150 ms, a second
//! copy goes out alongside it, and the first answer wins (the other copy is dropped).
//!
//! 1. A fast charge is never hedged: one request.
//! 2. The replica commits a charge and then stalls for 3 s before answering (a GC pause). After
//!    150 ms the hedge goes out with the same `Idempotency-Key` (from `reattempt::context()`),
//!    gets the stored charge back at once, and the call answers in about 150 ms: the card is
//!    charged once.
//! 3. `hedge_after = "p95", idempotent = true`: the delay is the 95th percentile of the lookup's recent latencies, so
//!    about 1 call in 20 hedges whatever the service's speed; after 100 fast lookups, one stalled
//!    lookup is hedged after a few milliseconds rather than waiting the stall out.
//!
//! Run it with `cargo run --example hedge` (under a second; no setup). Add
//! `RUST_LOG=reattempt=debug` to see the library's event for each hedge.
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

use std::time::Duration;

use reattempt::retryable;
use reattempt::testing::http::{Fault, Service};
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
}

#[derive(Debug, Deserialize)]
struct Price {
    price_cents: u64,
}

/// What a call can end in.
#[derive(Debug)]
enum ShopError {
    /// The attempt ran past its timeout: retried.
    Timeout,
    /// 503: retried.
    Unavailable,
    /// The connection failed: retried.
    Network(reqwest::Error),
    /// Any other status: not retried.
    Unexpected(StatusCode),
}

impl From<reattempt::Elapsed> for ShopError {
    fn from(_: reattempt::Elapsed) -> Self {
        ShopError::Timeout
    }
}

impl From<reqwest::Error> for ShopError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            ShopError::Timeout
        } else {
            ShopError::Network(e)
        }
    }
}

impl std::fmt::Display for ShopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShopError::Timeout => f.write_str("no answer within the timeout"),
            ShopError::Unavailable => f.write_str("503 Service Unavailable"),
            ShopError::Network(e) => write!(f, "network error: {e}"),
            ShopError::Unexpected(status) => write!(f, "unexpected {status}"),
        }
    }
}

/// The call's result, or the program stops with its error.
fn ok<T>(result: Result<T, ShopError>) -> T {
    result.unwrap_or_else(|e| panic!("the call failed: {e}"))
}

struct Shop {
    http: reqwest::Client,
    base: String,
}

impl Shop {
    /// Hedged after 150 ms; three attempts in all (copies included), each cut after 5 s.
    #[retryable(max_attempts = 3, hedge_after = "150ms", idempotent = true, timeout = "5s", delay = "50ms",
                retry_on = [ShopError::Timeout | ShopError::Unavailable | ShopError::Network(_)])]
    async fn charge(&self, order_id: &str, amount_cents: i64) -> Result<Receipt, ShopError> {
        let ctx = reattempt::context().expect("inside an attempt");
        println!("    attempt {} sent", ctx.attempt());
        let response = self
            .http
            .post(format!("{}/charges", self.base))
            // One key for the call: the hedge is recognised as the same charge.
            .header("Idempotency-Key", ctx.idempotency_key().to_string())
            .json(&Charge {
                order_id,
                amount_cents,
            })
            .send()
            .await?;
        match response.status() {
            s if s.is_success() => Ok(response.json().await?),
            StatusCode::SERVICE_UNAVAILABLE => Err(ShopError::Unavailable),
            s => Err(ShopError::Unexpected(s)),
        }
    }

    /// Hedged after the 95th percentile of its recent latencies.
    #[retryable(max_attempts = 2, hedge_after = "p95", idempotent = true, timeout = "5s",
                retry_on = [ShopError::Timeout | ShopError::Unavailable | ShopError::Network(_)])]
    async fn price(&self, sku: &str) -> Result<u64, ShopError> {
        let response = self
            .http
            .get(format!("{}/prices/{sku}", self.base))
            .send()
            .await?;
        match response.status() {
            s if s.is_success() => Ok(response.json::<Price>().await?.price_cents),
            StatusCode::SERVICE_UNAVAILABLE => Err(ShopError::Unavailable),
            s => Err(ShopError::Unexpected(s)),
        }
    }
}

#[tokio::main]
async fn main() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let service = Service::start().await;
    let shop = Shop {
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client"),
        base: service.url(),
    };

    println!(
        "1. Charge order-1 through {}: a fast answer, no hedge",
        service.url()
    );
    let t = Instant::now();
    let receipt = ok(shop.charge("order-1", 1250).await);
    println!(
        "    {} for {} in {} ms; requests: {}",
        receipt.charge_id,
        receipt.order_id,
        t.elapsed().as_millis(),
        service.seen_for("order-1").len()
    );
    assert_eq!(service.seen_for("order-1").len(), 1, "not hedged");

    println!("\n2. Charge order-2: the replica commits, then stalls for 3 s before answering");
    service.script_for("order-2", [Fault::SlowAnswer(Duration::from_secs(3))]);
    let t = Instant::now();
    let receipt = ok(shop.charge("order-2", 990).await);
    let took = t.elapsed();
    let seen = service.seen_for("order-2");
    println!(
        "    {} for {} in {} ms (the hedge's answer, replayed from the first request's charge)",
        receipt.charge_id,
        receipt.order_id,
        took.as_millis()
    );
    println!(
        "    requests: {}, same Idempotency-Key: {}, card charged {} time",
        seen.len(),
        seen.iter().all(|s| s.key == seen[0].key),
        service.effects("order-2")
    );
    assert_eq!(service.effects("order-2"), 1, "charged exactly once");
    assert!(took < Duration::from_secs(3), "answered by the hedge");

    println!("\n3. Price lookups with hedge_after = \"p95\": 100 fast ones, then one that stalls");
    for _ in 0..100 {
        ok(shop.price("tea").await);
    }
    service.script_for("coffee", [Fault::SlowAnswer(Duration::from_secs(3))]);
    let t = Instant::now();
    let cents = ok(shop.price("coffee").await);
    let took = t.elapsed();
    let seen = service.seen_for("coffee");
    assert_eq!(seen.len(), 2, "hedged");
    println!(
        "    coffee: {cents}¢ in {:.1} ms; the hedge went out {:.1} ms after the first request",
        took.as_secs_f64() * 1000.0,
        (seen[1].at - seen[0].at).as_secs_f64() * 1000.0
    );
    assert!(took < Duration::from_secs(3), "answered by the hedge");
}
