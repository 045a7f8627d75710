//! Review (issue 11): `#[cfg]` on an argument. The plain fn compiles with the argument
//! configured out; under `#[retryable]` the per-attempt binding (and the `recover` argument
//! tuple) still name it.
#![allow(missing_docs)]
use reattempt::retryable;

#[derive(Debug, PartialEq)]
pub struct Fail;

#[retryable(max_attempts = 2, delay = "1ms")]
async fn cfg_arg(a: u32, #[cfg(any())] b: u32) -> Result<u32, Fail> {
    Ok(a)
}

#[tokio::test(start_paused = true)]
async fn a_configured_out_argument_is_not_named() {
    assert_eq!(cfg_arg(1).await, Ok(1));
}
