// `retry_on` with one attempt and no guard that counts failures by it: it decides nothing.
use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
}

#[retryable(max_attempts = 1, retry_on = [ApiError::Unavailable])]
async fn fetch() -> Result<u32, ApiError> {
    Err(ApiError::Unavailable)
}

fn main() {
    let _ = fetch();
}
