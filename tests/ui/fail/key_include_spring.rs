use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
    Declined,
}

#[allow(dead_code)]
fn is_transient(e: &ApiError) -> bool {
    matches!(e, ApiError::Unavailable)
}

#[retryable(include = [ApiError::Unavailable])]
fn fetch(up: bool) -> Result<u32, ApiError> {
    if up { Err(ApiError::Declined) } else { Err(ApiError::Unavailable) }
}

fn main() {
    let _ = fetch(true);
}
