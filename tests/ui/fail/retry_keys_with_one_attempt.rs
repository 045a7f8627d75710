use std::time::Duration;

use reattempt::{RetryContext, retryable};

#[derive(Debug)]
enum ApiError {
    Unavailable,
}

fn log(_: &ApiError, _: &RetryContext, _: Duration) {}

#[retryable(max_attempts = 1, delay = "200ms", on_retry = log, retry_on = [ApiError::Unavailable])]
async fn fetch() -> Result<u32, ApiError> {
    Err(ApiError::Unavailable)
}

fn main() {}
