//! Review 3 batch 5 (scratch).

#![allow(dead_code)]

use reattempt::{recover, retryable};

fn _first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

#[recover]
fn generic_fallback<E>(_: E) -> Result<u32, E> {
    Ok(0)
}

#[retryable(max_attempts = 2, delay = "1ms", recover = generic_fallback)]
fn no_args() -> Result<u32, String> {
    Err("x".into())
}

#[test]
fn run_all() {
    assert_eq!(no_args(), Ok(0));
}
