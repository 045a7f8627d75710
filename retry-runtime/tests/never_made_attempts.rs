//! Attempts that are never made (a deadline spent on waking, a breaker rejection) cost nothing and
//! count nothing; found by a hostile review of the issue-10 fixes (each test failed before them).
//! The `Call` driver is driven as `#[retryable]` expands it (`admit` = `breaker.try_acquire().ok()`
//! before the attempt, then `decide` with `Guards::NONE.breaker(&b, admission).budget(&g)`).

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use retry_runtime::__private::{Call, Decision, Guards};
use retry_runtime::{
    BreakerOpen, BreakerState, CircuitBreaker, Elapsed, FnHooks, Jitter, RetryBudget, RetryPolicy,
    RetryPolicyBuilder,
};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);
const US: Duration = Duration::from_micros(1);

fn exact(builder: RetryPolicyBuilder) -> RetryPolicy {
    builder
        .jitter(Jitter::None)
        .build()
        .expect("a valid policy")
}

/// Moves the paused clock forward without yielding.
fn advance_now(d: Duration) {
    let mut advance = pin!(tokio::time::advance(d));
    let _ = advance
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
}

#[derive(Debug)]
#[allow(dead_code, reason = "`Open` is the rejection in test 3")]
enum ApiError {
    Reset,
    Elapsed,
    Open,
}

impl From<Elapsed> for ApiError {
    fn from(_: Elapsed) -> Self {
        ApiError::Elapsed
    }
}

impl From<BreakerOpen> for ApiError {
    fn from(_: BreakerOpen) -> Self {
        ApiError::Open
    }
}

// --------------------------------------------------------------------------------------------
// 1. An error that says it was a timeout is never charged `timeout_cost` by either driver.
// --------------------------------------------------------------------------------------------

/// README ("Retry budget"), budget.rs module docs and `Transient::is_timeout` promise that a retry
/// after an attempt whose *error says* it timed out (an I/O `TimedOut`, a reqwest read timeout)
/// costs `timeout_cost` (10). Neither built-in driver ever calls `Guards::timed_out`: the closure
/// API builds `Guards::NONE.breaker(..).budget(..)` and so does the macro's expansion.
#[tokio::test(start_paused = true)]
async fn an_error_reported_timeout_costs_timeout_cost_in_the_closure_api() {
    let policy = exact(RetryPolicy::builder().max_attempts(2));
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap(); // 5 / 10
    let out: io::Result<()> = policy
        .retry(|| async { Err(io::Error::from(io::ErrorKind::TimedOut)) })
        .timeout_if(retry_runtime::is_timeout)
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap_err().kind(), io::ErrorKind::TimedOut);
    assert_eq!(
        budget.available(),
        90,
        "one retry after an I/O TimedOut (Transient::is_timeout) must cost timeout_cost = 10"
    );
}

// --------------------------------------------------------------------------------------------
// 2. A retry paid for, whose attempt is then not made because the deadline is spent on waking,
//    is not refunded ("an attempt never made costs nothing").
// --------------------------------------------------------------------------------------------

/// tokio's timers have millisecond resolution and round up, so a sleep that was allowed because
/// it ends 0.5 ms before `max_elapsed` wakes exactly at the deadline; with a `timeout` the next
/// attempt is then "not made". The retry's 5 tokens were withdrawn and are never given back,
/// although the README says an attempt never made costs nothing (and refunds it for a breaker
/// rejection, the other never-made attempt).
#[tokio::test(start_paused = true)]
async fn a_paid_retry_whose_attempt_is_not_made_is_refunded_closure_api() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(100 * MS)
            .timeout(50 * MS)
            .max_elapsed(1000 * MS),
    );
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    let made = Cell::new(0);
    let t0 = Instant::now();
    let out: Result<(), ApiError> = policy
        .retry(|| {
            made.set(made.get() + 1);
            async {
                // The first attempt ends 899.5 ms in: a 100 ms sleep ends 0.5 ms before the deadline.
                advance_now(899 * MS + 500 * US);
                Err(ApiError::Reset)
            }
        })
        .budget(&budget)
        .await;
    assert!(matches!(out, Err(ApiError::Elapsed)), "{out:?}");
    assert_eq!(made.get(), 1, "the second attempt was not made");
    assert!(t0.elapsed() >= 1000 * MS, "woke at or past the deadline");
    assert_eq!(
        budget.available(),
        100,
        "the retry whose attempt was never made must be refunded"
    );
}

/// The same through `Call`, as `#[retryable]` drives it.
#[tokio::test(start_paused = true)]
async fn a_paid_retry_whose_attempt_is_not_made_is_refunded_call_driver() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(100 * MS)
            .timeout(50 * MS)
            .max_elapsed(1000 * MS),
    );
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    let mut call = Call::new(&policy);
    let mut n = 0;
    let out = loop {
        n += 1;
        let first = n == 1;
        let res: Result<(), ApiError> = call
            .attempt_timed(async move {
                if first {
                    advance_now(899 * MS + 500 * US);
                }
                Err(ApiError::Reset)
            })
            .await;
        match call.decide(
            "review",
            &mut FnHooks::of(&res),
            res,
            Guards::NONE.budget(&budget),
        ) {
            Decision::Stop(r) => break r,
            Decision::Retry(d) => call.sleep(d).await,
        }
    };
    assert!(matches!(out, Err(ApiError::Elapsed)), "{out:?}");
    assert_eq!(
        budget.available(),
        100,
        "the retry whose attempt was never made must be refunded"
    );
}

// --------------------------------------------------------------------------------------------
// 3. The attribute's driver takes a half-open probe for an attempt it then does not make.
// --------------------------------------------------------------------------------------------

fn tripped_breaker() -> CircuitBreaker {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let p = breaker.try_acquire().unwrap();
    breaker.record(p, false);
    assert_eq!(breaker.state(), BreakerState::Open);
    breaker
}

/// A policy whose calls stop 100 ms in.
fn outer_policy() -> RetryPolicy {
    exact(RetryPolicy::builder().max_attempts(1).max_elapsed(100 * MS))
}

/// Under a spent (inherited) deadline, a timed call makes no attempt. The generated code asks the
/// breaker *before* `attempt_timed` finds no time left, so a half-open breaker hands its only
/// probe to an attempt that is never made, and `decide`'s not-made path never records it: the
/// breaker refuses every caller for another `reset_timeout` (30 s here) without a single probe
/// having reached the dependency. The closure API checks the deadline before the breaker and
/// leaves the probe alone (asserted at the end: the drivers disagree).
#[tokio::test(start_paused = true)]
async fn a_spent_deadline_does_not_consume_a_half_open_probe_call_driver() {
    let inner = exact(RetryPolicy::builder().max_attempts(3).timeout(50 * MS));
    let breaker = tripped_breaker();
    sleep(Duration::from_secs(30)).await; // reset_timeout passed: half-open, one probe

    let res: Result<(), ApiError> = outer_policy()
        .retry(|| async {
            sleep(150 * MS).await; // the outer deadline is spent
            let mut call = Call::new(&inner);
            loop {
                let permit = call.admit(Some(&breaker), None, false, true).breaker(); // as the generated code does
                let res: Result<(), ApiError> = if permit.rejected() {
                    Err(ApiError::from(BreakerOpen::new()))
                } else {
                    call.attempt_timed(async { Ok(()) }).await
                };
                match call.decide(
                    "inner",
                    &mut FnHooks::of(&res),
                    res,
                    Guards::NONE.breaker(&breaker, permit),
                ) {
                    Decision::Stop(r) => break r,
                    Decision::Retry(d) => call.sleep(d).await,
                }
            }
        })
        .await;
    assert!(matches!(res, Err(ApiError::Elapsed)), "{res:?}");
    assert!(
        breaker.try_acquire().is_ok(),
        "no attempt reached the dependency: the half-open probe must still be available"
    );
}

/// The closure API in the same scenario: the probe is left for the next caller.
#[tokio::test(start_paused = true)]
async fn a_spent_deadline_does_not_consume_a_half_open_probe_closure_api() {
    let inner = exact(RetryPolicy::builder().max_attempts(3).timeout(50 * MS));
    let breaker = tripped_breaker();
    sleep(Duration::from_secs(30)).await;
    let res: Result<(), ApiError> = outer_policy()
        .retry(|| async {
            sleep(150 * MS).await;
            inner
                .retry(|| async { Ok::<(), ApiError>(()) })
                .circuit_breaker(&breaker)
                .await
        })
        .await;
    assert!(matches!(res, Err(ApiError::Elapsed)), "{res:?}");
    assert!(
        breaker.try_acquire().is_ok(),
        "the probe is still available"
    );
}

// --------------------------------------------------------------------------------------------
// 4. `max_attempts` beyond what the packed attempt counter holds is refused.
// --------------------------------------------------------------------------------------------

/// The engine packs the attempt number into 26 bits and saturates at `RetryPolicy::MAX_ATTEMPTS`
/// (2^26 − 1, engine/state/word.rs), so a larger `max_attempts` would never be reached (the call would
/// retry forever instead of giving up with `Exhausted`): the builder refuses it.
#[test]
fn max_attempts_beyond_what_the_engine_counts_is_refused() {
    let err = RetryPolicy::builder()
        .max_attempts(RetryPolicy::MAX_ATTEMPTS + 1)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "max_attempts");
    assert!(err.to_string().contains("at most 67108863"), "{err}");
    let err = RetryPolicy::builder()
        .max_attempts(u32::MAX - 1)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "max_attempts");
    // `u32::MAX` is the habit for "until the deadline": the most the engine counts.
    let forever = RetryPolicy::builder()
        .max_attempts(u32::MAX)
        .build()
        .unwrap();
    assert_eq!(forever.max_attempts(), RetryPolicy::MAX_ATTEMPTS);
    // The largest allowed count is still counted to the end.
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(RetryPolicy::MAX_ATTEMPTS)
            .delay(Duration::from_nanos(1))
            .max_delay(Duration::from_nanos(1)),
    );
    assert_eq!(policy.max_attempts(), (1 << 26) - 1);
}
