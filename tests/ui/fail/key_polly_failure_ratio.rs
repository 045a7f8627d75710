// Polly v8's circuit breaker option, in its C# case.
use reattempt::retryable;

#[retryable(FailureRatio = 0.5)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
