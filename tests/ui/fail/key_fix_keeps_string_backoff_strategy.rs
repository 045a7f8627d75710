use reattempt::retryable;

#[retryable(backoff_strategy = "exponential")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
