use reattempt::retryable;

// "Multiply each delay by a random 0.5–1.5."
#[retryable(jitter = 0.5..1.5)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
