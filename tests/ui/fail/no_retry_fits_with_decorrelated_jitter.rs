use reattempt::retryable;

#[retryable(delay = "2s", jitter = "decorrelated", max_elapsed = "1s")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
