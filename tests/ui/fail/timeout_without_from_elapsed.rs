use reattempt::retryable;

#[derive(Debug)]
struct ApiError;

#[retryable(max_attempts = 2, timeout = "1s")]
async fn fetch(fail: bool) -> Result<u32, ApiError> {
    if fail { Err(ApiError) } else { Ok(1) }
}

fn main() {
    drop(fetch(false));
}
