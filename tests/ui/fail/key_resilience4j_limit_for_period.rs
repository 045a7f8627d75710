// Resilience4j's rate limiter: no rate limiter here.
use reattempt::retryable;

#[retryable(limitForPeriod = 10)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
