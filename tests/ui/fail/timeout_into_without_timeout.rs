use reattempt::retryable;

#[retryable(max_attempts = 2, timeout_into = |_| 504)]
async fn fetch() -> Result<u32, u16> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
