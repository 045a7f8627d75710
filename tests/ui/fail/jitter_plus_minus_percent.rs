use reattempt::retryable;

#[retryable(jitter = "±20%")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
