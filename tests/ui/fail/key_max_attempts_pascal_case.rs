use reattempt::retryable;

// Resilience4j's `maxAttempts` counts the first attempt, as here.
#[retryable(MaxAttempts = 4)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
