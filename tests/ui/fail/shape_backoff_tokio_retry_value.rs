use reattempt::retryable;

#[retryable(backoff = ExponentialBackoff::from_millis(10))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
