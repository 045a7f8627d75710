// Hystrix's circuit breaker property, in milliseconds.
use reattempt::retryable;

#[retryable(circuitBreakerSleepWindowInMilliseconds = 5000)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
