use std::sync::LazyLock;

use reattempt::{AdaptiveThrottle, retryable};

static THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());

#[retryable(max_attempts = 2, throttle = THROTTLE)]
async fn fetch() -> Result<u32, std::num::ParseIntError> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
