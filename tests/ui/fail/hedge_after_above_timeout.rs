use reattempt::retryable;

#[retryable(max_attempts = 2, timeout = "40ms", hedge_after = "50ms", idempotent = true)]
async fn fetch() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
