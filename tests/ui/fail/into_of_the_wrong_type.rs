// A conversion that makes something other than the function's error: reported at the value.
use std::sync::LazyLock;

use reattempt::{AdaptiveThrottle, CircuitBreaker, retryable};

static THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());
static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().unwrap());

#[derive(Debug)]
struct RedisError;

#[retryable(throttle = THROTTLE, throttled_into = |_| "shed")]
async fn get(key: &str) -> Result<String, RedisError> {
    Ok(key.to_owned())
}

#[retryable(max_attempts = 2, hedge_after = "10ms", idempotent = true, circuit_breaker = BREAKER, breaker_open_into = |_| "open")]
async fn get_hedged(key: &str) -> Result<String, RedisError> {
    Ok(key.to_owned())
}

fn main() {
    drop(get("a"));
    drop(get_hedged("b"));
}
