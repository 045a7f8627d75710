use reattempt::retryable;

#[retryable(idempotent = "yes")]
async fn read() -> Result<u32, std::io::Error> {
    Ok(1)
}

#[retryable(idempotent = 0)]
async fn write() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
