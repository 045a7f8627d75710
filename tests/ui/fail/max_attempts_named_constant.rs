use reattempt::retryable;

const MAX_ATTEMPTS: u32 = 5;

#[retryable(max_attempts = MAX_ATTEMPTS)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
