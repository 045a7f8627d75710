// The HTTP client's setting, not the retry's.
use reattempt::retryable;

#[retryable(connect_timeout = "2s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
