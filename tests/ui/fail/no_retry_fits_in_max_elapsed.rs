use reattempt::retryable;

// The first sleep is 500 ms (no jitter), the deadline 300 ms: never a retry.
#[retryable(max_attempts = 5, delay = "500ms", jitter = "none", max_elapsed = "300ms")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
