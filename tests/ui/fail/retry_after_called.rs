// A hint function called instead of named.
use std::time::Duration;

use reattempt::retryable;

fn hint(_: &String) -> Option<Duration> {
    None
}

#[retryable(retry_after = hint())]
async fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
