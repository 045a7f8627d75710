//! The end-to-end tests' payment client (`tests/http_*.rs`): `#[retryable]` over reqwest, calling
//! `POST /charges` of reattempt's fault-injecting [`Service`] (`reattempt::testing::http`), with a schedule, a breaker and a budget each
//! test chooses at run time. Feature `http` (it reads `Retry-After` with `reattempt::http`).
//!
//! ```
//! use reattempt_support::payments::{Payments, quick};
//! use reattempt::testing::http::{Fault, Service};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = Service::start().await;
//! service.script_for("o-1", [Fault::Unavailable, Fault::LoseResponse]);
//! let payments = Payments::new(&service, quick());
//! let receipt = payments.charge("o-1", 1250).await.expect("charged by the second attempt, answered on the third");
//! assert_eq!(receipt.order_id, "o-1");
//! assert_eq!(service.effects("o-1"), 1);
//! # }
//! ```

use std::time::Duration;

use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy, retryable};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

use reattempt::testing::http::Service;

use crate::{http_client, retry_after};

/// Every way a charge can fail, as the client classifies it.
#[derive(Debug)]
pub enum PayError {
    /// The attempt's timeout ran out.
    Timeout,
    /// 503.
    Unavailable,
    /// 429, with the server's hint.
    TooManyRequests(Option<Duration>),
    /// Refused, reset, closed before the answer.
    Network(reqwest::Error),
    /// 400, with the server's reason.
    Rejected(String),
    /// The breaker is open: nothing was sent.
    CircuitOpen,
    /// Any other status.
    Unexpected(StatusCode),
}

impl PayError {
    /// The server's `Retry-After`, for `retry_after = …`.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PayError::TooManyRequests(hint) => *hint,
            _ => None,
        }
    }
}

impl From<reattempt::Elapsed> for PayError {
    fn from(_: reattempt::Elapsed) -> Self {
        PayError::Timeout
    }
}

impl From<reattempt::BreakerOpen> for PayError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        PayError::CircuitOpen
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

#[derive(Debug, Serialize)]
struct Charge<'a> {
    order_id: &'a str,
    amount_cents: i64,
}

/// The gateway's answer to a charge.
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct Receipt {
    /// The charge's id (`ch_1`, …): the same on a replay of the same key.
    pub charge_id: String,
    /// The order charged.
    pub order_id: String,
    /// The amount charged, in cents.
    pub amount_cents: i64,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: String,
}

/// How the client picks its `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// `reattempt::context()`'s key: one per logical call, the same on every attempt.
    PerCall,
    /// A fresh key on every attempt: the mistake the idempotency key exists to prevent.
    PerAttempt,
}

/// A payment client whose schedule, breaker and budget are chosen by each test.
pub struct Payments {
    http: reqwest::Client,
    base: String,
    /// The schedule of `charge`.
    pub policy: RetryPolicy,
    /// The breaker `charge` goes through (by default one that never opens).
    pub breaker: CircuitBreaker,
    /// The retry budget `charge` draws from (by default one that never runs dry).
    pub budget: RetryBudget,
    /// How `charge` picks its `Idempotency-Key` (by default [`Keys::PerCall`]).
    pub keys: Keys,
}

impl Payments {
    /// A client of `service` with `policy`, a breaker that never opens and a budget that never
    /// runs dry.
    ///
    /// # Panics
    /// Never: the breaker's and the budget's settings are valid.
    pub fn new(service: &Service, policy: RetryPolicy) -> Self {
        Payments {
            http: http_client(),
            base: service.url(),
            policy,
            breaker: CircuitBreaker::builder()
                .failure_threshold(u32::MAX)
                .build()
                .expect("a breaker"),
            budget: RetryBudget::builder()
                .max_tokens(u32::MAX)
                .build()
                .expect("a budget"),
            keys: Keys::PerCall,
        }
    }

    /// Retries timeouts, 503, 429 (after its `Retry-After`) and network errors; never a 400.
    #[retryable(policy = self.policy,
                retry_on = [PayError::Timeout | PayError::Unavailable
                            | PayError::TooManyRequests(_) | PayError::Network(_)],
                retry_after = PayError::retry_after,
                circuit_breaker = self.breaker, budget = self.budget)]
    pub async fn charge(&self, order_id: &str, amount_cents: i64) -> Result<Receipt, PayError> {
        let ctx = reattempt::context().expect("inside an attempt");
        let key = match self.keys {
            Keys::PerCall => ctx.idempotency_key().to_string(),
            Keys::PerAttempt => format!("{}-{}", ctx.idempotency_key(), ctx.attempt()),
        };
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
            s if s.is_success() => Ok(response.json().await?),
            StatusCode::SERVICE_UNAVAILABLE => Err(PayError::Unavailable),
            StatusCode::TOO_MANY_REQUESTS => {
                Err(PayError::TooManyRequests(retry_after(response.headers())))
            }
            StatusCode::BAD_REQUEST => Err(PayError::Rejected(
                response.json::<ErrorBody>().await?.error,
            )),
            s => Err(PayError::Unexpected(s)),
        }
    }
}

/// A schedule for tests: `attempts` attempts, `delay` apart (no jitter), each cut after
/// `timeout`, sleeps capped at `max_delay`.
///
/// # Panics
/// When the settings do not make a valid policy (`RetryPolicyBuilder::build` says which).
pub fn policy(
    attempts: u32,
    delay: Duration,
    timeout: Duration,
    max_delay: Duration,
) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(attempts)
        .delay(delay)
        .backoff(reattempt::Backoff::Fixed)
        .jitter(reattempt::Jitter::None)
        .timeout(timeout)
        .max_delay(max_delay)
        .build()
        .expect("a valid policy")
}

/// A quick schedule: 6 attempts, 10 ms apart, 300 ms each.
pub fn quick() -> RetryPolicy {
    policy(
        6,
        Duration::from_millis(10),
        Duration::from_millis(300),
        Duration::from_secs(5),
    )
}
