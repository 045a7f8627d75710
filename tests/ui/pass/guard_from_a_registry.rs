//! A guard reached through a registry, a lazy cell or a helper is one guard shared by every
//! call: none of these builds one per call, so none is refused.
use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use reattempt::{CircuitBreaker, retryable};

static BREAKERS: LazyLock<HashMap<&'static str, CircuitBreaker>> = LazyLock::new(|| {
    HashMap::from([("payments", CircuitBreaker::builder().build().unwrap())])
});
static ONCE: OnceLock<CircuitBreaker> = OnceLock::new();

struct Registry;

impl Registry {
    fn with_name(&self, name: &str) -> &'static CircuitBreaker {
        &BREAKERS[name]
    }
}

fn breaker() -> &'static CircuitBreaker {
    ONCE.get_or_init(|| CircuitBreaker::builder().build().unwrap())
}

#[retryable(circuit_breaker = Registry.with_name("payments"))]
async fn by_name() -> Result<u32, String> {
    Ok(1)
}

#[retryable(circuit_breaker = breaker())]
async fn by_helper() -> Result<u32, String> {
    Ok(1)
}

#[retryable(circuit_breaker = ONCE.get_or_init(|| CircuitBreaker::builder().build().unwrap()))]
async fn by_cell() -> Result<u32, String> {
    Ok(1)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(by_name().await, Ok(1));
    assert_eq!(by_helper().await, Ok(1));
    assert_eq!(by_cell().await, Ok(1));
}
