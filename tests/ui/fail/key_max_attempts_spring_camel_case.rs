use reattempt::retryable;

#[retryable(maxAttempts = 3)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
