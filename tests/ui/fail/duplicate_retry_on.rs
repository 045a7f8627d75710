use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
    Timeout,
}

#[retryable(retry_on = [ApiError::Unavailable], retry_on = [ApiError::Timeout])]
fn fetch(slow: bool) -> Result<u32, ApiError> {
    if slow {
        Err(ApiError::Timeout)
    } else {
        Err(ApiError::Unavailable)
    }
}

fn main() {
    let _ = fetch(true);
}
