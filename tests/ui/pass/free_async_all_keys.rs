#![deny(warnings, clippy::pedantic)]
//! A free `async fn` with every schedule key, and `name`.

use std::cell::Cell;
use std::time::Duration;

use reattempt::retryable;

#[derive(Debug, PartialEq)]
enum ApiError {
    Unavailable,
    Timeout,
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::Timeout
    }
}

#[retryable(
    max_attempts = 4,
    delay = "200ms",
    backoff = "exponential",
    multiplier = 1.5,
    max_delay = "2s",
    jitter = "none",
    timeout = "1s",
    max_elapsed = "1m 30s",
    name = "fetch"
)]
async fn fetch(calls: &Cell<u32>) -> Result<u32, ApiError> {
    calls.set(calls.get() + 1);
    if calls.get() < 3 {
        return Err(ApiError::Unavailable);
    }
    Ok(calls.get())
}

#[retryable(backoff = "linear", jitter = 0.25, delay = "10ms")]
async fn linear() -> Result<(), ApiError> {
    Ok(())
}

#[retryable(backoff = "fixed", jitter = "decorrelated")]
async fn fixed() -> Result<(), ApiError> {
    Ok(())
}

#[retryable(max_attempts = 1)]
async fn once() -> Result<(), ApiError> {
    Err(ApiError::Unavailable)
}

#[retryable(jitter = "equal")]
async fn equal() -> Result<(), ApiError> {
    Ok(())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let calls = Cell::new(0);
    let start = tokio::time::Instant::now();
    assert_eq!(fetch(&calls).await, Ok(3));
    assert_eq!(start.elapsed(), Duration::from_millis(200 + 300));
    assert_eq!(linear().await, Ok(()));
    assert_eq!(fixed().await, Ok(()));
    assert_eq!(once().await, Err(ApiError::Unavailable));
    assert_eq!(equal().await, Ok(()));
}
