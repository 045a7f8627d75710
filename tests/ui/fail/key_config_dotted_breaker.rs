// A TOML dotted key of this crate's config format: the [breaker] table's key.
use reattempt::retryable;

#[retryable(max_attempts = 3, breaker.failure_threshold = 5)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
