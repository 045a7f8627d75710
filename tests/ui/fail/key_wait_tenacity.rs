use reattempt::retryable;

#[retryable(wait = wait_exponential(multiplier = 1, max = 10))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
