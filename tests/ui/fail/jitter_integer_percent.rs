use reattempt::retryable;

#[retryable(jitter = 50)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
