use reattempt::retryable;

#[retryable(max_attempts = 2, throttled_into = |_| 429)]
fn fetch() -> Result<u32, u16> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
