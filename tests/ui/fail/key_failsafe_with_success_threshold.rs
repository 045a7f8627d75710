// Failsafe's circuit breaker builder method.
use reattempt::retryable;

#[retryable(withSuccessThreshold = 3)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
