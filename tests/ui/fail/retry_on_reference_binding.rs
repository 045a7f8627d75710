// `&transient` is a binding under a reference pattern: it matches every error.
use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
    Declined,
}

#[retryable(retry_on = [&transient])]
fn fetch(up: bool) -> Result<u32, ApiError> {
    if up { Err(ApiError::Declined) } else { Err(ApiError::Unavailable) }
}

fn main() {
    let _ = fetch(true);
}
