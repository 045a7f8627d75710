// By design, this case reports several errors: every broken key of one attribute at once, each
// at its own value, so that one compile shows everything to fix.
use reattempt::retryable;

#[retryable(
    max_attempts = 0,
    delay = "2 parsecs",
    jitter = "ful",
    multiplier = 0.5
)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
