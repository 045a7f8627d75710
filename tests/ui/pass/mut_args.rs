#![deny(warnings, clippy::pedantic)]
//! `mut` arguments: each attempt gets its own fresh, mutable clone.

use reattempt::retryable;

#[derive(Debug, PartialEq)]
struct Again;

#[retryable(max_attempts = 3, delay = "10ms", jitter = "none")]
async fn fill(mut buf: Vec<u8>, mut budget: u32, log: &mut Vec<usize>) -> Result<Vec<u8>, Again> {
    buf.push(1);
    budget -= 1;
    log.push(buf.len());
    if log.len() < 3 {
        return Err(Again);
    }
    Ok(buf
        .into_iter()
        .chain([u8::try_from(budget).unwrap_or(u8::MAX)])
        .collect())
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn count(mut n: u32) -> Result<u32, Again> {
    n += 1;
    Ok(n)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut log = Vec::new();
    assert_eq!(fill(vec![0], 5, &mut log).await, Ok(vec![0, 1, 4]));
    // Every attempt started from the caller's value, not the previous attempt's.
    assert_eq!(log, [2, 2, 2]);
    assert_eq!(count(1), Ok(2));
}
