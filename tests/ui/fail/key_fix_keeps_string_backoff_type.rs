use reattempt::retryable;

#[retryable(BackoffType = "Exponential")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
