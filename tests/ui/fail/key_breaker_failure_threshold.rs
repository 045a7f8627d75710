// A circuit breaker's setting, as this crate's own builder and [breaker] table name it.
use reattempt::retryable;

#[retryable(max_attempts = 3, failure_threshold = 5)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
