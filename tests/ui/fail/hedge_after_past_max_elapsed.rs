use reattempt::retryable;

#[retryable(hedge_after = "2s", idempotent = true, max_elapsed = "1s")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
