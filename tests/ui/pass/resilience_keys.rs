#![deny(warnings, clippy::pedantic)]
//! `circuit_breaker`, `budget` and `policy`, from statics and from fields, stay lint-clean.

use std::sync::LazyLock;
use std::time::Duration;

use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy, retryable};

#[derive(Debug)]
enum ApiError {
    Unavailable,
    CircuitOpen,
    Timeout,
}

impl From<reattempt::BreakerOpen> for ApiError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        ApiError::CircuitOpen
    }
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::Timeout
    }
}

static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().expect("valid"));
static BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| RetryBudget::builder().build().expect("valid"));
static POLICY: LazyLock<RetryPolicy> = LazyLock::new(|| {
    RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_millis(5))
        .build()
        .expect("valid")
});

#[retryable(policy = POLICY, circuit_breaker = BREAKER, budget = BUDGET,
            retry_on = [ApiError::Unavailable | ApiError::Timeout])]
async fn statics(fail: bool) -> Result<u32, ApiError> {
    if fail { Err(ApiError::Unavailable) } else { Ok(1) }
}

struct Client {
    breaker: CircuitBreaker,
    budget: RetryBudget,
    calls: u32,
}

impl Client {
    #[retryable(max_attempts = 2, delay = "5ms", circuit_breaker = &self.breaker,
                budget = self.budget)]
    async fn fields(&mut self) -> Result<u32, ApiError> {
        self.calls += 1;
        Ok(self.calls)
    }

    #[retryable(max_attempts = 2, delay = "5ms", circuit_breaker = self.breaker)]
    fn blocking(&self) -> Result<u32, ApiError> {
        Ok(self.calls)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert!(statics(false).await.is_ok());
    assert!(statics(true).await.is_err());
    let mut client = Client {
        breaker: CircuitBreaker::builder().build().expect("valid"),
        budget: RetryBudget::builder().build().expect("valid"),
        calls: 0,
    };
    assert_eq!(client.fields().await.ok(), Some(1));
    assert_eq!(client.blocking().ok(), Some(1));
}
