use reattempt::retryable;

#[retryable(max_delay_seconds = 10)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
