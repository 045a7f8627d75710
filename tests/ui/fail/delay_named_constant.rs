use std::time::Duration;

use reattempt::retryable;

const DELAY: Duration = Duration::from_millis(200);

#[retryable(delay = DELAY, max_attempts = 4)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
