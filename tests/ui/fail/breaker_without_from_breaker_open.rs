use std::sync::LazyLock;

use reattempt::{CircuitBreaker, retryable};

static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().unwrap());

#[retryable(max_attempts = 2, circuit_breaker = BREAKER)]
async fn fetch() -> Result<u32, std::num::ParseIntError> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
