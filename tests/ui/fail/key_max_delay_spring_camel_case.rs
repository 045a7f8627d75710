use reattempt::retryable;

#[retryable(maxDelay = 5000)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
