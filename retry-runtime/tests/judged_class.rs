//! The class the crate's judgement notes (`reattempt::transient`, the crate's own `is_transient`
//! impls) is the class of hooks that state none, for that error alone: never the next
//! attempt's, never another call's, never an inner cause's, and never over a class the user
//! stated.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use retry_runtime::{ErrorClass, Jitter, RetryBudget, RetryPolicy, Transient};

const MS: Duration = Duration::from_millis(1);

/// Transient from 10 ms, throttling from 1 s; no jitter, so sleeps compare exactly.
fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(10 * MS)
        .throttling_delay(Duration::from_secs(1))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

/// Transient 5, timeout 10, throttling 1.
fn budget() -> RetryBudget {
    RetryBudget::builder()
        .max_tokens(100)
        .throttling_cost(1)
        .build()
        .unwrap()
}

#[derive(Debug)]
enum ApiError {
    SlowDown,
    Unavailable,
}

impl Transient for ApiError {
    fn is_transient(&self) -> bool {
        true
    }
    fn class(&self) -> ErrorClass {
        match self {
            ApiError::SlowDown => ErrorClass::Throttling,
            ApiError::Unavailable => ErrorClass::Transient,
        }
    }
}

/// Sleeps of a call, in order (`on_retry`).
type Sleeps = std::sync::Mutex<Vec<Duration>>;

fn sleeps(s: &Sleeps) -> Vec<Duration> {
    s.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn the_crates_own_is_transient_tells_the_class() {
    let (policy, budget) = (policy(2), budget());
    let out: io::Result<()> = policy
        .retry(|| async { Err(io::ErrorKind::TimedOut.into()) })
        .retry_if(|e: &io::Error| e.is_transient())
        .idempotent(true)
        .without_timeout()
        .budget(&budget)
        .await;
    assert!(out.is_err());
    assert_eq!(
        budget.available(),
        90,
        "a timeout's retry costs timeout_cost"
    );
}

#[tokio::test(start_paused = true)]
async fn a_class_noted_for_one_error_does_not_reach_the_next_attempt() {
    let (policy, budget, calls, seen) = (policy(3), budget(), AtomicU32::new(0), Sleeps::default());
    let out = policy
        .retry(|| async {
            match calls.fetch_add(1, SeqCst) {
                0 => Err(ApiError::SlowDown),
                // A rule of the user's for the second error: nothing noted, whatever the first
                // error's judgement noted.
                1 => Err(ApiError::Unavailable),
                n => Ok(n),
            }
        })
        .retry_if(|e| matches!(e, ApiError::Unavailable) || retry_runtime::transient(e))
        .on_retry(|_, _, d| seen.lock().unwrap().push(d))
        .without_timeout()
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(sleeps(&seen), [Duration::from_secs(1), 20 * MS]);
    assert_eq!(
        budget.available(),
        100 - 1,
        "the transient retry's 5 came back on success"
    );
}

#[tokio::test(start_paused = true)]
async fn a_class_noted_in_one_call_does_not_reach_another_running_beside_it() {
    let (policy, budget) = (policy(3), budget());
    let (throttled, plain) = (Sleeps::default(), Sleeps::default());
    let a = policy
        .retry(|| async { Err::<(), _>(ApiError::SlowDown) })
        .retry_if(retry_runtime::transient)
        .on_retry(|_, _, d| throttled.lock().unwrap().push(d))
        .without_timeout()
        .budget(&budget);
    // The same error type, judged by a rule of the user's: transient.
    let b = policy
        .retry(|| async {
            tokio::task::yield_now().await;
            Err::<(), _>(ApiError::SlowDown)
        })
        .retry_if(|_| true)
        .on_retry(|_, _, d| plain.lock().unwrap().push(d))
        .without_timeout()
        .budget(&budget);
    let (a, b) = tokio::join!(a, b);
    assert!(a.is_err() && b.is_err());
    assert_eq!(
        sleeps(&throttled),
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
    assert_eq!(sleeps(&plain), [10 * MS, 20 * MS]);
    // Two throttling retries at 1 token, two transient ones at 5.
    assert_eq!(budget.available(), 100 - 2 - 2 * 5);
}

/// A wrapper's own class wins over the class of what its `is_transient` asks.
#[derive(Debug)]
struct Wrapped(io::Error);

impl Transient for Wrapped {
    fn is_transient(&self) -> bool {
        self.0.is_transient()
    }
}

#[tokio::test(start_paused = true)]
async fn a_wrappers_own_class_wins_over_the_class_of_what_it_wraps() {
    let (policy, budget) = (policy(2), budget());
    let out = policy
        .retry(|| async { Err::<(), _>(Wrapped(io::ErrorKind::TimedOut.into())) })
        .retry_if(retry_runtime::transient)
        .idempotent(true)
        .without_timeout()
        .budget(&budget)
        .await;
    assert!(out.is_err());
    assert_eq!(
        budget.available(),
        95,
        "Wrapped says transient (its default class)"
    );
}

/// The class `io::Error`'s own `is_transient` notes (a timeout) belongs to the `io::Error`, not
/// to the `Wrapped` asked: `Wrapped`'s class is its own (transient), as `#[retryable]` asks it.
#[tokio::test(start_paused = true)]
async fn a_class_noted_for_what_an_error_wraps_is_not_the_errors() {
    let (policy, budget) = (policy(2), budget());
    let out = policy
        .retry(|| async { Err::<(), _>(Wrapped(io::ErrorKind::TimedOut.into())) })
        .retry_if(|e: &Wrapped| e.is_transient())
        .idempotent(true)
        .without_timeout()
        .budget(&budget)
        .await;
    assert!(out.is_err());
    assert_eq!(budget.available(), 95, "transient's 5, not a timeout's 10");
}

#[tokio::test(start_paused = true)]
async fn timeout_if_names_timeouts_and_leaves_the_other_classes_to_transient() {
    let (policy, budget, calls) = (policy(3), budget(), AtomicU32::new(0));
    let out: Result<(), _> = policy
        .retry(|| async {
            match calls.fetch_add(1, SeqCst) {
                0 => Err(ApiError::SlowDown),
                _ => Err(ApiError::Unavailable),
            }
        })
        .retry_if(retry_runtime::transient)
        .timeout_if(|e| matches!(e, ApiError::Unavailable))
        .without_timeout()
        .budget(&budget)
        .await;
    assert!(out.is_err());
    assert_eq!(
        budget.available(),
        100 - 1 - 10,
        "throttling, then a timeout"
    );
}

/// Hooks whose own `class` says transient: stated, so it wins.
struct Stated;

impl retry_runtime::Hooks<(), ApiError> for Stated {
    fn retry_if(&mut self, e: &ApiError) -> bool {
        retry_runtime::transient(e)
    }
    fn class(&mut self, _: &ApiError) -> ErrorClass {
        ErrorClass::Transient
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_that_state_a_class_keep_it() {
    let (policy, budget) = (policy(2), budget());
    let out = policy
        .retry(|| async { Err::<(), _>(ApiError::SlowDown) })
        .hooks(Stated)
        .without_timeout()
        .budget(&budget)
        .await;
    assert!(out.is_err());
    assert_eq!(budget.available(), 95);
}
