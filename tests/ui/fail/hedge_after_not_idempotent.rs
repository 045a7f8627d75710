use reattempt::retryable;

#[retryable(max_attempts = 2, hedge_after = "50ms", idempotent = false)]
async fn charge() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
