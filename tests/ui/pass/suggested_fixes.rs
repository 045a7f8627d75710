#![deny(warnings, clippy::pedantic)]
//! The code the messages of issue 38 suggest compiles as written: a preset as a run-time policy,
//! each guard built with the setting a message moves onto its builder and given by its key, a
//! classification kept with one attempt because a breaker counts by it, and a closure retried
//! through `RetryPolicy::retry`.

use std::sync::LazyLock;
use std::time::Duration;

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, RetryBudget, RetryPolicy, retryable};

#[derive(Debug)]
enum ApiError {
    Unavailable,
    Rejected,
}

impl From<reattempt::BreakerOpen> for ApiError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        ApiError::Rejected
    }
}

impl From<reattempt::BulkheadFull> for ApiError {
    fn from(_: reattempt::BulkheadFull) -> Self {
        ApiError::Rejected
    }
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::Unavailable
    }
}

impl From<reattempt::Throttled> for ApiError {
    fn from(_: reattempt::Throttled) -> Self {
        ApiError::Rejected
    }
}

// `preset = "aws-2026"`
static POLICY: std::sync::LazyLock<reattempt::RetryPolicy> =
    std::sync::LazyLock::new(|| reattempt::Preset::Aws2026.policy().build().unwrap());
static BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| {
    reattempt::Preset::Aws2026
        .budget()
        .max_tokens(10)
        .retry_cost(5)
        .timeout_cost(10)
        .throttling_cost(5)
        .success_deposit(1)
        .build()
        .unwrap()
});
// `failure_threshold = 5`, `waitDurationInOpenState = "60s"`, `FailureRatio = 0.5`, …
static BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(|| {
    CircuitBreaker::builder()
        .failure_threshold(5)
        .reset_timeout(Duration::from_secs(60))
        .half_open_probes(3)
        .build()
        .unwrap()
});
static RATE_BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(|| {
    CircuitBreaker::builder()
        .failure_rate(0.5)
        .sliding_window(100)
        .minimum_calls(20)
        .build()
        .unwrap()
});
static BULKHEAD: LazyLock<Bulkhead> = LazyLock::new(|| {
    Bulkhead::builder()
        .max_concurrent(10)
        .max_wait(Duration::from_millis(100))
        .build()
        .unwrap()
});
static THROTTLE: LazyLock<AdaptiveThrottle> = LazyLock::new(|| {
    AdaptiveThrottle::builder()
        .k(2.0)
        .window(Duration::from_secs(120))
        .build()
        .unwrap()
});

#[retryable(policy = POLICY, budget = BUDGET, circuit_breaker = BREAKER, bulkhead = BULKHEAD,
            throttle = THROTTLE)]
async fn fetch() -> Result<u32, ApiError> {
    Ok(1)
}

// One attempt: `retry_on` still decides what the breaker counts as a failure.
#[retryable(max_attempts = 1, retry_on = [ApiError::Unavailable], circuit_breaker = RATE_BREAKER)]
async fn probe() -> Result<u32, ApiError> {
    Err(ApiError::Unavailable)
}

async fn call() -> Result<u32, ApiError> {
    Ok(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), reattempt::PolicyError> {
    assert_eq!(fetch().await.ok(), Some(1));
    assert!(matches!(probe().await, Err(ApiError::Unavailable)));
    // `#[retryable]` on a closure
    let policy = RetryPolicy::builder().max_attempts(3).build()?;
    assert_eq!(policy.retry(|| async { call().await }).await.ok(), Some(2));
    Ok(())
}
