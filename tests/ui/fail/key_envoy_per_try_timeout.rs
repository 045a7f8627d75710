// Envoy's per-try timeout.
use reattempt::retryable;

#[retryable(per_try_timeout = "1s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
