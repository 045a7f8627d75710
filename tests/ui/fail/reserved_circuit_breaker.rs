use reattempt::retryable;

#[retryable(max_attempts = 2, circuit_breaker = "payments")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
