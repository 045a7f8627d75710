//! A message sender (SMS, push, e-mail): retries at most 3 times on 429 and 5xx, 500 ms → 1 s →
//! 2 s apart with ±20 % jitter (or after the provider's `Retry-After`, capped at 2 s), never on
//! a 400 (an invalid phone number is invalid on every attempt), and never delivers a message
//! twice: every attempt of a send carries the same `Idempotency-Key`, so a message the provider
//! delivered before the connection dropped is not delivered again.
//!
//! The provider is a real HTTP service on `127.0.0.1` (port 0) with scripted faults.
//!
//! Run it with `cargo run --example notify` (about five seconds).
//! `RUST_LOG=reattempt=debug cargo run --example notify` also shows each retry event.
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

/// The innermost cause of an error ("Connection refused (os error 111)"), which says more than
/// reqwest's "error sending request for url (…)".
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    to: &'a str,
    text: &'a str,
}

#[derive(Debug, Deserialize)]
struct Accepted {
    message_id: String,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: String,
}

#[derive(Debug)]
enum SendError {
    /// 429: retried after the provider's `Retry-After`, if it sent one.
    RateLimited { retry_after: Option<Duration> },
    /// 5xx: retried.
    Server(StatusCode),
    /// The connection failed or was lost mid-request: retried (the key makes that safe).
    Connection(reqwest::Error),
    /// No answer within the attempt's timeout: retried.
    Timeout,
    /// 400: the number is not a phone number. Never retried.
    InvalidNumber(String),
    /// Another 4xx: not retried.
    Rejected(StatusCode),
}

impl SendError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            SendError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

impl From<reattempt::Elapsed> for SendError {
    fn from(_: reattempt::Elapsed) -> Self {
        SendError::Timeout
    }
}

impl From<reqwest::Error> for SendError {
    fn from(e: reqwest::Error) -> Self {
        SendError::Connection(e)
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::RateLimited {
                retry_after: Some(d),
            } => write!(f, "429 Too Many Requests, Retry-After {d:.1?}"),
            SendError::RateLimited { retry_after: None } => f.write_str("429 Too Many Requests"),
            SendError::Server(status) | SendError::Rejected(status) => write!(f, "{status}"),
            SendError::Connection(e) => write!(f, "{}", root_cause(e)),
            SendError::Timeout => f.write_str("timed out"),
            SendError::InvalidNumber(why) => write!(f, "400 Bad Request: {why}"),
        }
    }
}

struct Notifier {
    http: reqwest::Client,
    provider: String,
    started: Instant,
}

impl Notifier {
    #[retryable(max_attempts = 4, delay = "500ms", multiplier = 2, max_delay = "2s",
                jitter = 0.2, timeout = "1s",
                retry_on = [SendError::RateLimited { .. } | SendError::Server(_)
                            | SendError::Connection(_) | SendError::Timeout],
                no_retry_on = [SendError::InvalidNumber(_)],
                retry_after = SendError::retry_after,
                on_retry = |e, ctx, d| self.log_retry(e, ctx, d))]
    async fn send(&self, to: &str, text: &str) -> Result<String, SendError> {
        let ctx = reattempt::context().expect("inside an attempt");
        println!(
            "  {:>6}  attempt {}/{}  POST /messages  Idempotency-Key: {}",
            self.clock(),
            ctx.attempt(),
            ctx.max_attempts(),
            ctx.idempotency_key()
        );
        let response = self
            .http
            .post(format!("{}/messages", self.provider))
            .header("Idempotency-Key", ctx.idempotency_key().to_string())
            .json(&Message { to, text })
            .send()
            .await?;
        match response.status() {
            s if s.is_success() => Ok(response.json::<Accepted>().await?.message_id),
            StatusCode::TOO_MANY_REQUESTS => Err(SendError::RateLimited {
                retry_after: reattempt::http::retry_after(response.headers()),
            }),
            StatusCode::BAD_REQUEST => Err(SendError::InvalidNumber(
                response.json::<ErrorBody>().await?.error,
            )),
            s if s.is_server_error() => Err(SendError::Server(s)),
            s => Err(SendError::Rejected(s)),
        }
    }

    fn log_retry(&self, err: &SendError, ctx: &RetryContext, delay: Duration) {
        println!(
            "  {:>6}  attempt {} failed: {err}; retrying in {}ms",
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
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let provider = Service::start().await;
    provider.narrate(true);
    let notifier = Notifier {
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client"),
        provider: provider.url(),
        started: Instant::now(),
    };

    let phone = "+4915550100";
    println!(
        "1. Send a login code to {phone}: throttled (Retry-After as a date), delivered but the \
         connection drops, then a 503"
    );
    provider.script_for(
        phone,
        [
            Fault::RateLimited(RetryAfter::Date(Duration::from_secs(1))),
            Fault::CommitThenReset,
            Fault::Unavailable,
        ],
    );
    let sent = notifier.send(phone, "Your code is 493 117").await;
    println!("  {:>6}  result: {sent:?}", notifier.clock());
    let delivered = provider.effects(phone);
    println!("          messages delivered to {phone}: {delivered}\n");
    assert!(sent.is_ok());
    assert_eq!(delivered, 1, "delivered exactly once");

    let bad = "555-0100";
    println!("2. Send to {bad:?}: an invalid number is a 400, never retried");
    let sent = notifier.send(bad, "Your code is 220 981").await;
    println!("  {:>6}  result: {sent:?}", notifier.clock());
    let requests = provider.seen_for(bad).len();
    println!("          requests for {bad:?}: {requests}");
    assert!(matches!(sent, Err(SendError::InvalidNumber(_))));
    assert_eq!(requests, 1);
}
