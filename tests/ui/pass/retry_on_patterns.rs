#![deny(warnings, clippy::pedantic)]
//! `retry_on` / `no_retry_on` with ranges, bindings, `_` inside a pattern (a lone `_` is rejected), or-patterns and nested patterns.

use std::cell::Cell;

use reattempt::retryable;

#[derive(Debug, PartialEq, Clone)]
enum ApiError {
    Http(u16),
    Io {
        kind: &'static str,
        retries_left: u8,
    },
    Timeout,
    Declined,
}

#[retryable(
    max_attempts = 3,
    delay = "10ms",
    retry_on = [ApiError::Http(500..=599) | ApiError::Timeout, ApiError::Io { kind: "reset", .. }],
    no_retry_on = [ApiError::Http(501)]
)]
async fn call(errors: &[ApiError], calls: &Cell<usize>) -> Result<usize, ApiError> {
    let i = calls.get();
    calls.set(i + 1);
    match errors.get(i) {
        Some(e) => Err(e.clone()),
        None => Ok(i),
    }
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [ApiError::Declined | ApiError::Http(_)])]
fn everything(calls: &Cell<usize>) -> Result<(), ApiError> {
    calls.set(calls.get() + 1);
    Err(ApiError::Declined)
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [err @ (ApiError::Http(400 | 429) | ApiError::Io { retries_left: 1.., .. })])]
fn bindings(calls: &Cell<usize>, err: &ApiError) -> Result<(), ApiError> {
    calls.set(calls.get() + 1);
    Err(err.clone())
}

#[retryable(max_attempts = 3, delay = "1ms", no_retry_on = [ApiError::Declined | ApiError::Http(..=499)])]
fn all_but(calls: &Cell<usize>, err: &ApiError) -> Result<(), ApiError> {
    calls.set(calls.get() + 1);
    Err(err.clone())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let calls = Cell::new(0);
    assert_eq!(
        call(&[ApiError::Http(503), ApiError::Timeout], &calls).await,
        Ok(2)
    );
    calls.set(0);
    assert_eq!(
        call(&[ApiError::Http(501)], &calls).await,
        Err(ApiError::Http(501))
    );
    assert_eq!(calls.get(), 1);
    calls.set(0);
    let reset = ApiError::Io {
        kind: "reset",
        retries_left: 0,
    };
    assert_eq!(
        call(&[reset.clone(), ApiError::Declined], &calls).await,
        Err(ApiError::Declined)
    );
    assert_eq!(calls.get(), 2);

    let calls = Cell::new(0);
    assert_eq!(everything(&calls), Err(ApiError::Declined));
    assert_eq!(calls.get(), 3);

    let calls = Cell::new(0);
    assert_eq!(
        bindings(&calls, &ApiError::Http(429)),
        Err(ApiError::Http(429))
    );
    assert_eq!(calls.get(), 3);
    calls.set(0);
    assert_eq!(bindings(&calls, &reset), Err(reset));
    assert_eq!(calls.get(), 1);

    let calls = Cell::new(0);
    assert_eq!(
        all_but(&calls, &ApiError::Http(404)),
        Err(ApiError::Http(404))
    );
    assert_eq!(calls.get(), 1);
    calls.set(0);
    assert_eq!(all_but(&calls, &ApiError::Timeout), Err(ApiError::Timeout));
    assert_eq!(calls.get(), 3);
}
