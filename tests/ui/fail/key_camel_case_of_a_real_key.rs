use reattempt::retryable;

#[retryable(maxElapsed = "30s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
