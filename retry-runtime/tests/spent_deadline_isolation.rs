//! The closure API's spent-deadline path with a circuit breaker: an attempt that is "not made"
//! (no time remained when its sleep ended) is not a breaker rejection, and leaves nothing behind
//! for the next call on the thread. Each test failed against 740d7c6..e7a2861, when the
//! rejection check ran first and the "not made" mark was a thread-local the next call could find.

use std::cell::Cell;
use std::time::Duration;

use retry_runtime::{
    BreakerOpen, CircuitBreaker, Elapsed, Jitter, RetryPolicy, RetryPolicyBuilder,
};

const MS: Duration = Duration::from_millis(1);

fn exact(builder: RetryPolicyBuilder) -> RetryPolicy {
    builder
        .jitter(Jitter::None)
        .build()
        .expect("a valid policy")
}

#[derive(Debug, PartialEq)]
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

/// Moves the paused clock forward without yielding.
fn advance_now(d: Duration) {
    use std::future::Future;
    let mut advance = std::pin::pin!(tokio::time::advance(d));
    let _ = advance
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
}

/// A call with a breaker (closed), a timeout and `max_elapsed`, whose first attempt fails 899.5 ms
/// in: the 100 ms retry is allowed (it ends 0.5 ms before the deadline), but tokio's
/// millisecond timer wakes it at or past the deadline, so the second attempt is "not made" and
/// the call ends with `Elapsed`.
async fn call_whose_deadline_is_spent_on_waking(breaker: &CircuitBreaker) -> Result<(), ApiError> {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(100 * MS)
            .timeout(50 * MS)
            .max_elapsed(1000 * MS),
    );
    let made = Cell::new(0);
    let out = policy
        .retry(|| {
            made.set(made.get() + 1);
            async {
                advance_now(899 * MS + Duration::from_micros(500));
                Err(ApiError::Reset)
            }
        })
        .circuit_breaker(breaker)
        .await;
    assert_eq!(made.get(), 1, "the second attempt was not made");
    out
}

/// After that call, an unrelated call on the same thread whose first attempt fails with a
/// retryable error must retry (it once found the mark the previous call left, treated its real
/// attempt as "not made" and gave up at once, without retrying, counting the attempt or telling
/// its breaker).
#[tokio::test(start_paused = true)]
async fn a_spent_deadline_with_a_breaker_does_not_poison_the_next_call_on_the_thread() {
    let breaker = CircuitBreaker::builder().build().unwrap();
    let res = call_whose_deadline_is_spent_on_waking(&breaker).await;
    assert_eq!(res, Err(ApiError::Elapsed));

    // A plain call: no deadline, no breaker, 3 attempts, succeeds on the third.
    let policy = exact(RetryPolicy::builder().max_attempts(3).delay(10 * MS));
    let made = Cell::new(0);
    let out: Result<u32, ApiError> = policy
        .retry(|| {
            made.set(made.get() + 1);
            let n = made.get();
            async move { if n < 3 { Err(ApiError::Reset) } else { Ok(n) } }
        })
        .await;
    assert_eq!(
        (out, made.get()),
        (Ok(3), 3),
        "an unrelated call with no deadline must retry its retryable errors"
    );
}

/// The same poison through a breaker: the next call's real failure is never recorded, so a
/// dependency that fails does not open the breaker (threshold 1 here).
#[tokio::test(start_paused = true)]
async fn the_next_calls_failure_still_reaches_its_breaker() {
    let unrelated = CircuitBreaker::builder().build().unwrap();
    let _ = call_whose_deadline_is_spent_on_waking(&unrelated).await;

    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let policy = exact(RetryPolicy::builder().max_attempts(1));
    let out: Result<(), ApiError> = policy
        .retry(|| async { Err(ApiError::Reset) })
        .circuit_breaker(&breaker)
        .await;
    assert_eq!(out, Err(ApiError::Reset));
    assert_eq!(
        breaker.state(),
        retry_runtime::BreakerState::Open,
        "the failed attempt must be recorded as the breaker's failure"
    );
}

/// The spent deadline itself is reported as a rejection by an open breaker (give-up reason
/// "circuit breaker open", `reattempt.breaker.rejections` + 1), although the breaker is
/// closed and was never asked. Without a breaker, or through `Call`, the same call reports
/// "`max_elapsed` reached" and counts no rejection.
#[cfg(feature = "metrics")]
#[test]
fn a_spent_deadline_is_not_counted_as_a_breaker_rejection() {
    use metrics_util::MetricKind;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::builder().build().unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            assert_eq!(
                call_whose_deadline_is_spent_on_waking(&breaker).await,
                Err(ApiError::Elapsed)
            );
        });
    });
    assert_eq!(breaker.state(), retry_runtime::BreakerState::Closed);
    let rejections: u64 = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| {
            k.kind() == MetricKind::Counter && k.key().name() == "reattempt.breaker.rejections"
        })
        .map(|(.., v)| match v {
            DebugValue::Counter(n) => n,
            _ => 0,
        })
        .sum();
    assert_eq!(
        rejections, 0,
        "the breaker is closed and was never asked: no rejection happened"
    );
}
