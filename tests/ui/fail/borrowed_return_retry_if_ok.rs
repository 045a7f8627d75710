// `retry_if_ok` cannot retry an `Ok` that borrows from the lent input.
use reattempt::retryable;

#[retryable(max_attempts = 2, retry_if_ok = |v: &&mut u32| **v == 0)]
async fn get(pool: &mut u32) -> Result<&mut u32, String> {
    Ok(pool)
}

fn main() {}
