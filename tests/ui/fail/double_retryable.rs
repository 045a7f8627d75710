// Compiled before: two nested loops, 3 × 5 = 15 attempts.
use reattempt::retryable;

#[retryable(max_attempts = 3)]
#[retryable(max_attempts = 5)]
fn fetch() -> Result<u32, String> {
    Err("down".into())
}

fn main() {
    let _ = fetch();
}
