//! Stacking `#[retryable]` with other attribute macros cannot multiply attempts.
//!
//! A second `#[retryable]` on one function is a compile error (see
//! `tests/ui/fail/double_retryable*.rs`), so attempts could only multiply through another
//! macro that re-runs or wraps the body. `#[tracing::instrument]`, the attribute most often
//! stacked on a retried call, is checked here in both orders: the call still makes exactly
//! `max_attempts` attempts.

use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::retryable;

static OUTER_CALLS: AtomicU32 = AtomicU32::new(0);
static INNER_CALLS: AtomicU32 = AtomicU32::new(0);

// `#[retryable]` first: it expands first and sees `#[tracing::instrument]` in the function's
// attributes, which it keeps on the rewritten function.
#[retryable(max_attempts = 3, delay = "10ms", jitter = "none")]
#[tracing::instrument]
async fn retryable_outside(id: u32) -> Result<u32, String> {
    OUTER_CALLS.fetch_add(1, Ordering::SeqCst);
    Err(format!("{id} is down"))
}

// `#[tracing::instrument]` first: `#[retryable]` then rewrites the instrumented function.
#[tracing::instrument]
#[retryable(max_attempts = 4, delay = "10ms", jitter = "none")]
async fn retryable_inside(id: u32) -> Result<u32, String> {
    INNER_CALLS.fetch_add(1, Ordering::SeqCst);
    Err(format!("{id} is down"))
}

#[tokio::test(start_paused = true)]
async fn instrument_over_or_under_retryable_makes_max_attempts_attempts() {
    assert_eq!(retryable_outside(1).await, Err("1 is down".to_owned()));
    assert_eq!(OUTER_CALLS.load(Ordering::SeqCst), 3);
    assert_eq!(retryable_inside(2).await, Err("2 is down".to_owned()));
    assert_eq!(INNER_CALLS.load(Ordering::SeqCst), 4);
}
