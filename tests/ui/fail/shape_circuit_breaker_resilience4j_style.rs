use reattempt::retryable;

#[retryable(circuit_breaker(name = "payments"))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
