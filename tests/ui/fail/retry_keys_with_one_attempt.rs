use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
}

#[retryable(max_attempts = 1, delay = "200ms", retry_on = [ApiError::Unavailable])]
async fn fetch() -> Result<u32, ApiError> {
    Err(ApiError::Unavailable)
}

fn main() {}
