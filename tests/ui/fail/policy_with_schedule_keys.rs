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

fn main() {
    drop(fetch());
}
