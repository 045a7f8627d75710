use reattempt::retryable;

// Polly v8's `RetryStrategyOptions.MaxRetryAttempts`: retries, not attempts.
#[retryable(MaxRetryAttempts = 3)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
