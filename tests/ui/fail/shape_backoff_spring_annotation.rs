use reattempt::retryable;

#[retryable(backoff = @Backoff(delay = 100, multiplier = 2, maxDelay = 5000))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
