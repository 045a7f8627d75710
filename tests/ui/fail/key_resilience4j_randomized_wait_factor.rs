use reattempt::retryable;

#[retryable(randomizedWaitFactor = 0.5)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
