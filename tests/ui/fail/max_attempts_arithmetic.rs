use reattempt::retryable;

const RETRIES: u32 = 3;

#[retryable(max_attempts = RETRIES + 1)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
