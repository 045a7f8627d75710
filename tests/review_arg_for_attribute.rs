//! Review (issue 11/12): a by-value argument used only by the attribute
//! (`circuit_breaker = breaker`, the breaker handed in per call). The expansion still clones it
//! into each attempt, where it is unused: `unused_variables` fires under
//! `#![deny(warnings)]`, and the compiler's suggested fix (`_breaker`) does not compile, since
//! a `_name` argument is renamed in the signature and the attribute's expression no longer
//! finds it (E0425). Run: `cargo test --test review_arg_for_attribute`.
#![deny(warnings)]
#![allow(missing_docs)]
use std::sync::Arc;

use reattempt::{BreakerOpen, CircuitBreaker, retryable};

#[derive(Debug, PartialEq)]
pub enum E {
    Open,
}
impl From<BreakerOpen> for E {
    fn from(_: BreakerOpen) -> Self {
        E::Open
    }
}

#[retryable(max_attempts = 2, delay = "1ms", circuit_breaker = breaker)]
async fn per_call_breaker(breaker: Arc<CircuitBreaker>, id: u32) -> Result<u32, E> {
    Ok(id)
}

// The compiler's suggestion for the warning above.
#[retryable(max_attempts = 2, delay = "1ms", circuit_breaker = _breaker)]
async fn per_call_breaker_underscore(_breaker: Arc<CircuitBreaker>, id: u32) -> Result<u32, E> {
    Ok(id)
}

#[tokio::test(start_paused = true)]
async fn an_argument_read_only_by_the_attribute() {
    let b = Arc::new(CircuitBreaker::builder().build().expect("valid"));
    assert_eq!(per_call_breaker(b.clone(), 3).await, Ok(3));
    assert_eq!(per_call_breaker_underscore(b, 4).await, Ok(4));
}
