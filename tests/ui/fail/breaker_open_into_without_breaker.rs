use reattempt::retryable;

#[retryable(max_attempts = 2, breaker_open_into = |_| 503)]
async fn fetch() -> Result<u32, u16> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
