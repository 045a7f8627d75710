use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Http(u16),
}

#[retryable(retry_on = [ApiError::Http(code) if code >= 500])]
fn fetch(code: u16) -> Result<u32, ApiError> {
    Err(ApiError::Http(code))
}

fn main() {
    let _ = fetch(503);
}
