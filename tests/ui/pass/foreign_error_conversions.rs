// Another crate's error type (here std's `ParseIntError`, which no one can give a `From` impl):
// each failure of the library's own gets a conversion at its key, in the loop and hedged.
#![deny(warnings, clippy::pedantic)]

use std::num::ParseIntError;
use std::sync::LazyLock;

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, retryable};

static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().unwrap());
static THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());
static BULKHEAD: LazyLock<Bulkhead> = LazyLock::new(|| Bulkhead::builder().build().unwrap());

fn failed() -> ParseIntError {
    "x".parse::<u32>().unwrap_err()
}

#[retryable(
    max_attempts = 2,
    timeout = "1s",
    timeout_into = |_| failed(),
    circuit_breaker = BREAKER,
    breaker_open_into = |_| failed(),
    throttle = THROTTLE,
    throttled_into = |_| failed(),
    bulkhead = BULKHEAD,
    bulkhead_full_into = |_| failed()
)]
async fn parse(text: &str) -> Result<u32, ParseIntError> {
    text.parse()
}

#[retryable(
    max_attempts = 2,
    hedge_after = "50ms", idempotent = true,
    timeout = "1s",
    timeout_into = |_| failed(),
    circuit_breaker = BREAKER,
    breaker_open_into = |_| failed(),
    throttle = THROTTLE,
    throttled_into = |_| failed(),
    bulkhead = BULKHEAD,
    bulkhead_full_into = |_| failed()
)]
async fn parse_hedged(text: &str) -> Result<u32, ParseIntError> {
    text.parse()
}

fn main() {
    drop(parse("1"));
    drop(parse_hedged("1"));
}
