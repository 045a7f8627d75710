use reattempt::retryable;

#[retryable(timeoutMs = 500)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
