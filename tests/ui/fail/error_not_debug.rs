use reattempt::retryable;

struct ApiError;

#[retryable(max_attempts = 2)]
fn fetch(fail: bool) -> Result<u32, ApiError> {
    if fail { Err(ApiError) } else { Ok(1) }
}

fn main() {
    let _ = fetch(false);
}
