#![deny(warnings, clippy::pedantic)]
//! Blocking functions: sleeps with `std::thread::sleep`; `?` and `return` end one attempt.

use std::cell::Cell;
use std::num::ParseIntError;

use reattempt::retryable;

#[retryable(
    max_attempts = 3,
    delay = "1ms",
    max_delay = "2ms",
    jitter = "none",
    max_elapsed = "5s"
)]
fn parse(inputs: &[&str], calls: &Cell<usize>) -> Result<u32, ParseIntError> {
    let i = calls.get();
    calls.set(i + 1);
    let n: u32 = inputs[i].parse()?;
    Ok(n * 2)
}

#[retryable(max_attempts = 2, delay = "1ms")]
pub fn context_attempt() -> Result<u32, String> {
    let ctx = reattempt::context().ok_or("no context")?;
    if ctx.attempt() < 2 {
        return Err(format!(
            "attempt {} of {}",
            ctx.attempt(),
            ctx.max_attempts()
        ));
    }
    Ok(ctx.attempt())
}

fn main() {
    let calls = Cell::new(0);
    assert_eq!(parse(&["x", "y", "21"], &calls), Ok(42));
    assert_eq!(calls.get(), 3);
    assert_eq!(context_attempt(), Ok(2));
}
