//! A payment gateway client, as in Spring Retry's classic example: at most 4 attempts, 200 ms
//! doubling up to 2 s with full jitter, each attempt cut after 1 s, retrying only timeouts and
//! 503s, and a `#[recover]` that marks the order PENDING when the attempts run out, to be settled
//! later, rather than failing the checkout.
//!
//! The gateway is a real HTTP service on `127.0.0.1` (port 0) with scripted faults. The order id
//! is the `Idempotency-Key`: a business key that stays the same on every attempt and even across
//! restarts of the shop, so a charge whose answer was lost is replayed, not made twice.
//!
//! Run it with `cargo run --example payment` (about four seconds).
//! `RUST_LOG=reattempt=debug cargo run --example payment` also shows each retry event.
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

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use reattempt::testing::http::{Fault, Service};
use reattempt::{RetryContext, recover, retryable};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Serialize)]
struct Order {
    order_id: String,
    amount_cents: i64,
}

#[derive(Debug, Deserialize)]
struct Receipt {
    charge_id: String,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: String,
}

/// Where an order stands in the shop's own records.
#[derive(Debug, Clone, PartialEq)]
enum OrderStatus {
    /// Charged; the gateway's charge id.
    Paid(String),
    /// Not known to be charged: a reconciliation job settles it later (with the same key).
    Pending(String),
    /// The gateway refused the charge.
    Declined(String),
}

#[derive(Debug)]
enum PayError {
    /// No answer within the attempt's timeout (the gateway may have charged): retried.
    Timeout,
    /// 503 from the gateway: retried.
    Unavailable,
    /// 400/402 and the like: the charge is refused; not retried.
    Declined(String),
    /// Anything else (a reset connection, an odd status): not retried, so the order goes
    /// PENDING and is reconciled, rather than risking a second charge without knowing.
    Other(String),
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
            PayError::Other(e.to_string())
        }
    }
}

impl fmt::Display for PayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayError::Timeout => f.write_str("timed out after 1s"),
            PayError::Unavailable => f.write_str("503 Service Unavailable"),
            PayError::Declined(why) => write!(f, "declined: {why}"),
            PayError::Other(why) => f.write_str(why),
        }
    }
}

struct Checkout {
    http: reqwest::Client,
    gateway: String,
    orders: Mutex<BTreeMap<String, OrderStatus>>,
    started: Instant,
}

impl Checkout {
    #[retryable(max_attempts = 4, delay = "200ms", multiplier = 2, max_delay = "2s",
                jitter = "full", timeout = "1s",
                retry_on = [PayError::Timeout | PayError::Unavailable],
                on_retry = |e, ctx, d| self.log_retry(e, ctx, d),
                recover = Self::mark_pending)]
    async fn charge(&self, order: &Order) -> Result<OrderStatus, PayError> {
        let response = self
            .http
            .post(format!("{}/charges", self.gateway))
            .header("Idempotency-Key", format!("charge-{}", order.order_id))
            .json(order)
            .send()
            .await?;
        let status = match response.status() {
            s if s.is_success() => OrderStatus::Paid(response.json::<Receipt>().await?.charge_id),
            StatusCode::SERVICE_UNAVAILABLE => return Err(PayError::Unavailable),
            s if s.is_client_error() => {
                return Err(PayError::Declined(
                    response.json::<ErrorBody>().await?.error,
                ));
            }
            s => return Err(PayError::Other(format!("unexpected {s}"))),
        };
        self.record(order, status.clone());
        Ok(status)
    }

    /// Called once when the charge did not go through: a refusal is final; anything else leaves
    /// the order PENDING, since the gateway may or may not have charged it.
    #[recover]
    async fn mark_pending(&self, err: PayError, order: &Order) -> Result<OrderStatus, PayError> {
        let status = match err {
            PayError::Declined(why) => OrderStatus::Declined(why),
            err => OrderStatus::Pending(err.to_string()),
        };
        self.record(order, status.clone());
        Ok(status)
    }

    fn record(&self, order: &Order, status: OrderStatus) {
        self.orders
            .lock()
            .unwrap()
            .insert(order.order_id.clone(), status);
    }

    fn log_retry(&self, err: &PayError, ctx: &RetryContext, delay: Duration) {
        println!(
            "  {:>6}  attempt {}/{} failed: {err}; retrying in {}ms",
            format!("{}ms", self.started.elapsed().as_millis()),
            ctx.attempt(),
            ctx.max_attempts(),
            delay.as_millis()
        );
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
    let gateway = Service::start().await;
    gateway.narrate(true);
    let checkout = Checkout {
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client"),
        gateway: gateway.url(),
        orders: Mutex::new(BTreeMap::new()),
        started: Instant::now(),
    };

    let cases: [(&str, i64, &str, Vec<Fault>); 4] = [
        (
            "A-100",
            2599,
            "a 503, then a hung request, then success",
            vec![Fault::Unavailable, Fault::Hang],
        ),
        (
            "A-101",
            1200,
            "the gateway charges, but its answer is lost",
            vec![Fault::LoseResponse],
        ),
        (
            "A-102",
            4000,
            "the gateway is down for good: PENDING",
            vec![Fault::Unavailable; 4],
        ),
        (
            "A-103",
            0,
            "an invalid amount: refused, not retried",
            vec![],
        ),
    ];
    for (order_id, amount_cents, what, faults) in cases {
        println!("order {order_id}: {what}");
        gateway.script_for(order_id, faults);
        let order = Order {
            order_id: order_id.to_owned(),
            amount_cents,
        };
        let status = checkout.charge(&order).await;
        println!(
            "  {:>6}  {status:?} after {} request(s); charges at the gateway: {}\n",
            format!("{}ms", checkout.started.elapsed().as_millis()),
            gateway.seen_for(order_id).len(),
            gateway.effects(order_id)
        );
        assert!(gateway.effects(order_id) <= 1, "never charged twice");
    }

    println!("the shop's orders:");
    for (order, status) in checkout.orders.lock().unwrap().iter() {
        println!("  {order}  {status:?}");
    }
}
