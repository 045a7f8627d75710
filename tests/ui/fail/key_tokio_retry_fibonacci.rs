// tokio-retry's Fibonacci backoff.
use reattempt::retryable;

#[retryable(FibonacciBackoff = 100)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
