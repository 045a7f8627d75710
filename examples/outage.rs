//! A dependency that goes fully down and comes back: the circuit breaker opens, rejects calls
//! without touching the network, probes, and closes again; the retry budget stops retries early
//! in the outage, so a dead dependency is not hit three times per call; callers get a cached
//! price from `#[recover]` meanwhile. The library's own `tracing` events show each step.
//!
//! The price service is a real HTTP service on `127.0.0.1` (port 0). At 0.6 s it is stopped (its
//! port refuses connections); at 2.5 s it is started again on the same port. A caller asks for a
//! price every 200 ms.
//!
//! Run it with `cargo run --example outage` (about four seconds). The default filter shows the
//! breaker's transitions (INFO) and each call that gave up (WARN);
//! `RUST_LOG=reattempt=debug cargo run --example outage` also shows each retry.
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

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::testing::http::Service;
use reattempt::{CircuitBreaker, RetryBudget, recover, retryable};
use reqwest::StatusCode;
use serde::Deserialize;
use tokio::time::Instant;
use tracing_subscriber::EnvFilter;

/// The innermost cause of an error ("Connection refused (os error 111)"), which says more than
/// reqwest's "error sending request for url (…)".
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[derive(Debug, Deserialize)]
struct Price {
    price_cents: u64,
}

/// Where a price came from.
#[derive(Debug)]
enum Quote {
    Live(u64),
    /// The last live price, served by `#[recover]` while the service cannot be reached.
    Cached(u64),
}

#[derive(Debug)]
enum PriceError {
    /// Refused, reset (the innermost cause, e.g. "Connection refused"): retried.
    Connection(String),
    /// No answer in time: retried.
    Timeout,
    /// 503, 502, …: retried.
    Unavailable(StatusCode),
    /// The breaker is open: the call was not made (never retried).
    CircuitOpen,
    /// Anything else: not retried.
    Other(String),
}

impl From<reattempt::Elapsed> for PriceError {
    fn from(_: reattempt::Elapsed) -> Self {
        PriceError::Timeout
    }
}

impl From<reattempt::BreakerOpen> for PriceError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        PriceError::CircuitOpen
    }
}

impl From<reqwest::Error> for PriceError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            PriceError::Timeout
        } else {
            PriceError::Connection(root_cause(&e))
        }
    }
}

impl std::fmt::Display for PriceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PriceError::Connection(why) | PriceError::Other(why) => f.write_str(why),
            PriceError::Timeout => f.write_str("timed out"),
            PriceError::Unavailable(status) => write!(f, "{status}"),
            PriceError::CircuitOpen => f.write_str("circuit open"),
        }
    }
}

struct Prices {
    http: reqwest::Client,
    base: String,
    /// Opens after 6 failed attempts in a row; probes after 900 ms with 2 calls.
    breaker: CircuitBreaker,
    /// 10 tokens, 5 per retry, 1 back per success: two retries, then none until calls succeed.
    budget: RetryBudget,
    last_known: Mutex<Option<u64>>,
    /// Attempts that went to the network (the service cannot count refused connections).
    attempts: AtomicU32,
}

impl Prices {
    #[retryable(max_attempts = 3, delay = "50ms", jitter = "full", timeout = "300ms",
                retry_on = [PriceError::Connection(_) | PriceError::Timeout
                            | PriceError::Unavailable(_)],
                circuit_breaker = self.breaker, budget = self.budget,
                recover = Self::cached)]
    async fn price(&self, sku: &str) -> Result<Quote, PriceError> {
        self.attempts.fetch_add(1, SeqCst);
        let response = self
            .http
            .get(format!("{}/prices/{sku}", self.base))
            .send()
            .await?;
        match response.status() {
            StatusCode::OK => {
                let cents = response.json::<Price>().await?.price_cents;
                *self.last_known.lock().unwrap() = Some(cents);
                Ok(Quote::Live(cents))
            }
            s if s.is_server_error() => Err(PriceError::Unavailable(s)),
            s => Err(PriceError::Other(format!("unexpected {s}"))),
        }
    }

    #[recover]
    async fn cached(&self, err: PriceError) -> Result<Quote, PriceError> {
        match *self.last_known.lock().unwrap() {
            Some(cents) => Ok(Quote::Cached(cents)),
            None => Err(err),
        }
    }
}

#[tokio::main]
async fn main() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("reattempt=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let mut service = Service::start().await;
    let prices = Prices {
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client"),
        base: service.url(),
        breaker: CircuitBreaker::builder()
            .failure_threshold(6)
            .reset_timeout(Duration::from_millis(900))
            .half_open_probes(2)
            .name("prices")
            .build()
            .expect("a valid breaker"),
        budget: RetryBudget::builder()
            .max_tokens(10)
            .retry_cost(5)
            .success_deposit(1)
            .build()
            .expect("a valid budget"),
        last_known: Mutex::new(None),
        attempts: AtomicU32::new(0),
    };

    let start = Instant::now();
    let mut cached = 0;
    println!("   time  call  quote        attempts  breaker    budget");
    for call in 0..20u32 {
        let at = start + Duration::from_millis(200) * call;
        tokio::time::sleep_until(at).await;
        if call == 3 {
            service.stop().await;
            println!("  --- the price service goes down: its port refuses connections ---");
        }
        if call == 13 {
            service.restart().await;
            println!("  --- the price service is back ---");
        }
        let before = prices.attempts.load(SeqCst);
        let quote = prices.price("tea").await;
        let attempts = prices.attempts.load(SeqCst) - before;
        if matches!(quote, Ok(Quote::Cached(_))) {
            cached += 1;
        }
        println!(
            "  {:>4.1}s  {call:>4}  {:<11}  {attempts:>8}  {:<9}  {:>2}/10",
            at.duration_since(start).as_secs_f64(),
            match &quote {
                Ok(Quote::Live(c)) => format!("live {c}¢"),
                Ok(Quote::Cached(c)) => format!("cached {c}¢"),
                Err(e) => format!("error: {e}"),
            },
            prices.breaker.state().to_string(),
            prices.budget.available(),
        );
    }

    let attempts = prices.attempts.load(SeqCst);
    println!(
        "\n20 calls, {attempts} attempts on the network (at most 3 each would have been 60); \
         {cached} answered from the cache; breaker {} at the end",
        prices.breaker.state()
    );
    assert_eq!(prices.breaker.state(), reattempt::BreakerState::Closed);
}
