use std::sync::LazyLock;

use reattempt::{AdaptiveThrottle, retryable};

static THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());

#[derive(Debug)]
struct Down;

impl From<reattempt::Elapsed> for Down {
    fn from(_: reattempt::Elapsed) -> Self {
        Down
    }
}

// A hedged call's copies ask the throttle too: its rejection needs a conversion.
#[retryable(max_attempts = 2, hedge_after = "50ms", idempotent = true, throttle = THROTTLE)]
async fn fetch() -> Result<u32, Down> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
