use reattempt::retryable;

#[retryable(jitter = "0.5-1.5")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
