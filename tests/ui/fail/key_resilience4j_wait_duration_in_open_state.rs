// Resilience4j's circuit breaker: how long it stays open.
use reattempt::retryable;

#[retryable(waitDurationInOpenState = "60s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
