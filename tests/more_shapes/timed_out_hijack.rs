//! Review 3: the timeout probe (`TimeoutProbe(e).timed_out()`, method-call syntax) is hijacked
//! by a user extension trait with a `timed_out` method: a non-`Transient` error is counted as a
//! timeout (`timeout_cost`); with a `Transient` error the expansion does not compile (E0034).

#![allow(dead_code)]

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::{RetryBudget, RetryPolicy, retryable};

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

static BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| {
    RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(5)
        .timeout_cost(10)
        .success_deposit(0)
        .build()
        .expect("budget")
});
static SEEN: AtomicU32 = AtomicU32::new(0);

#[derive(Debug)]
struct Fail;

/// A user's extension trait, blanket-implemented, with a method named `timed_out`.
trait TimedOutExt {
    fn timed_out(self) -> bool;
}

impl<T> TimedOutExt for T {
    fn timed_out(self) -> bool {
        true
    }
}

#[retryable(max_attempts = 2, delay = "1ms", budget = BUDGET)]
fn not_transient() -> Result<u32, Fail> {
    if first_try() {
        return Err(Fail);
    }
    SEEN.store(BUDGET.available(), Ordering::SeqCst);
    Ok(1)
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn policy_by_value(policy: RetryPolicy) -> Result<u32, String> {
    let _ = policy;
    Err("x".into())
}

#[test]
fn a_plain_error_costs_the_retry_cost() {
    assert_eq!(not_transient().ok(), Some(1));
    // `Fail` is not `Transient`: the retry costs `retry_cost` (5), not `timeout_cost` (10).
    assert_eq!(SEEN.load(Ordering::SeqCst), 95);
}
