// Failsafe's name for errors never to retry.
use reattempt::retryable;

#[retryable(abortOn = ApiError::BadRequest)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
