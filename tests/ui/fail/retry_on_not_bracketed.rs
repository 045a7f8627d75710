use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
    Declined,
}

#[retryable(retry_on = ApiError::Unavailable)]
fn fetch(up: bool) -> Result<u32, ApiError> {
    if up {
        Err(ApiError::Declined)
    } else {
        Err(ApiError::Unavailable)
    }
}

fn main() {
    let _ = fetch(true);
}
