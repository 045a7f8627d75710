use reattempt::retryable;

#[retryable(max_attempts = 1, hedge_after = "50ms")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
