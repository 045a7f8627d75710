use reattempt::retryable;

#[retryable(hedgingDelay = "50ms")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
