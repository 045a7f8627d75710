// Finagle's retry budget.
use reattempt::retryable;

#[retryable(percentCanRetry = 0.2)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
