#![deny(warnings, clippy::pedantic)]
//! `on_retry`, `retry_after` and `retry_if_ok`, as closures and as paths.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use reattempt::{RetryContext, retryable};

#[derive(Debug, PartialEq)]
enum HttpError {
    TooMany { retry_after_ms: u64 },
    Down,
}

fn hint(e: &HttpError) -> Option<Duration> {
    match e {
        HttpError::TooMany { retry_after_ms } => Some(Duration::from_millis(*retry_after_ms)),
        HttpError::Down => None,
    }
}

fn log(e: &HttpError, ctx: &RetryContext, delay: Duration) {
    eprintln!(
        "attempt {} failed with {e:?}; sleeping {delay:?}",
        ctx.attempt()
    );
}

// `retry_if_ok` takes `Fn(&T) -> bool`.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_accepted(status: &u16) -> bool {
    *status == 202
}

thread_local! {
    static SEEN: RefCell<Vec<(u32, Duration)>> = const { RefCell::new(Vec::new()) };
}

#[retryable(
    max_attempts = 3,
    delay = "100ms",
    jitter = "none",
    retry_after = hint,
    on_retry = |_e, ctx, delay| SEEN.with(|s| s.borrow_mut().push((ctx.attempt(), delay)))
)]
async fn limited(calls: &Cell<u32>) -> Result<u32, HttpError> {
    calls.set(calls.get() + 1);
    if calls.get() == 1 {
        return Err(HttpError::TooMany {
            retry_after_ms: 750,
        });
    }
    if calls.get() == 2 {
        return Err(HttpError::Down);
    }
    Ok(calls.get())
}

#[retryable(
    max_attempts = 3,
    delay = "10ms",
    retry_after = |e: &HttpError| if *e == HttpError::Down { Some(Duration::from_millis(1)) } else { None },
    on_retry = log,
    retry_if_ok = is_accepted
)]
async fn poll(statuses: &[u16], calls: &Cell<usize>) -> Result<u16, HttpError> {
    let i = calls.get();
    calls.set(i + 1);
    Ok(statuses[i])
}

#[retryable(max_attempts = 2, delay = "1ms", retry_if_ok = |v: &Vec<u8>| v.is_empty())]
fn fetch_rows(calls: &Cell<usize>) -> Result<Vec<u8>, HttpError> {
    calls.set(calls.get() + 1);
    Ok(Vec::new())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let calls = Cell::new(0);
    assert_eq!(limited(&calls).await, Ok(3));
    let seen = SEEN.with(|s| s.borrow().clone());
    assert_eq!(
        seen,
        [
            (1, Duration::from_millis(750)),
            (2, Duration::from_millis(200))
        ]
    );

    let calls = Cell::new(0);
    assert_eq!(poll(&[202, 202, 200], &calls).await, Ok(200));
    let calls = Cell::new(0);
    assert_eq!(poll(&[202, 202, 202, 200], &calls).await, Ok(202));
    assert_eq!(calls.get(), 3);

    let calls = Cell::new(0);
    assert_eq!(fetch_rows(&calls), Ok(Vec::new()));
    assert_eq!(calls.get(), 2);
}
