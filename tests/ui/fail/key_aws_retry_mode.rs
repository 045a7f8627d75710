// The AWS SDKs' retry mode.
use reattempt::retryable;

#[retryable(retry_mode = "standard")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
