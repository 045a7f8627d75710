use reattempt::retryable;

// Spring's `maxAttempts = Integer.MAX_VALUE`, in Rust.
#[retryable(max_attempts = i32::MAX, max_elapsed = "30s")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
