use reattempt::retryable;

#[retryable(max_attempts = 1, idempotent = true)]
async fn read() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
