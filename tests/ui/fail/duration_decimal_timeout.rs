// A decimal number of seconds.
use reattempt::retryable;

#[retryable(max_attempts = 3, timeout = 2.5)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
