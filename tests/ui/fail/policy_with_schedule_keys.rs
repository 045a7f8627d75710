use std::sync::LazyLock;

use reattempt::{RetryPolicy, retryable};

static POLICY: LazyLock<RetryPolicy> = LazyLock::new(|| RetryPolicy::builder().build().unwrap());

#[derive(Debug)]
struct ApiError;

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError
    }
}

#[retryable(policy = POLICY, max_attempts = 3)]
async fn fetch() -> Result<u32, ApiError> {
    Ok(1)
}

// What events log of an error is the policy's too.
#[retryable(policy = POLICY, log_error = "debug")]
async fn fetch_logged() -> Result<u32, ApiError> {
    Ok(1)
}

fn main() {
    drop(fetch());
    drop(fetch_logged());
}
