use reattempt::retryable;

#[retryable(MAX_RETRIES = 5)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
