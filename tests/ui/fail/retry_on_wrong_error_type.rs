use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
}

#[derive(Debug)]
enum DbError {
    Locked,
}

#[retryable(retry_on = [DbError::Locked])]
fn fetch(up: bool) -> Result<u32, ApiError> {
    if up {
        Ok(1)
    } else {
        Err(ApiError::Unavailable)
    }
}

fn main() {
    let _ = fetch(true);
    let _ = DbError::Locked;
}
