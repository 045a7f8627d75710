use reattempt::retryable;

#[retryable(backoff = exponential)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
