use reattempt::retryable;

#[retryable(jitter = 0.0..=1.0)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
