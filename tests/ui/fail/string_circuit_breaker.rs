// Compiled before (darling read the string's contents as an expression).
use std::sync::LazyLock;

use reattempt::{CircuitBreaker, retryable};

#[derive(Debug)]
enum ApiError {
    Open,
}

impl From<reattempt::BreakerOpen> for ApiError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        ApiError::Open
    }
}

#[allow(non_upper_case_globals)]
static payments: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().expect("valid"));

#[retryable(circuit_breaker = "payments")]
fn charge() -> Result<u32, ApiError> {
    Err(ApiError::Open)
}

fn main() {
    let _ = charge();
    let _ = &*payments;
}
