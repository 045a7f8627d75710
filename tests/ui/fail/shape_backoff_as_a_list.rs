use reattempt::retryable;

#[retryable(backoff(delay = "100ms", multiplier = 2))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
