//! The attempt drivers under adversarial conditions, through both the generated code's driver
//! (`Call`, as `#[retryable]` expands) and the closure API: bodies that never yield to the timer,
//! deadlines already spent, server hints, clock and setting extremes, a future polled after it
//! finished. Time is paused unless a test says otherwise.

use std::cell::Cell;
use std::future::{Future, IntoFuture};
use std::io;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use retry_runtime::{
    BreakerState, Call, CircuitBreaker, Decision, Elapsed, Guards, Jitter, RetryPolicy,
    RetryPolicyBuilder,
};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

fn exact(builder: RetryPolicyBuilder) -> RetryPolicy {
    builder
        .jitter(Jitter::None)
        .build()
        .expect("a valid policy")
}

fn is_elapsed(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::TimedOut
        && e.get_ref()
            .is_some_and(|inner| inner.downcast_ref::<Elapsed>().is_some())
}

/// Moves the paused clock forward without yielding (the first poll of `advance` moves it).
fn advance_now(d: Duration) {
    let mut advance = pin!(tokio::time::advance(d));
    let _ = advance
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
}

/// A body that is always ready to make progress: it loops on a channel that always holds a
/// message, so it returns `Pending` only when tokio's cooperative budget runs out. With `tick`,
/// each message also moves the paused clock forward by that much (without yielding).
async fn busy(tick: Option<Duration>) -> io::Result<()> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    loop {
        tx.send(()).expect("open");
        rx.recv().await;
        if let Some(tick) = tick {
            advance_now(tick);
        }
    }
}

/// Guards a test against hanging: a starved timer would otherwise never end it.
async fn guarded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .expect("the attempt's timeout never fired")
}

// ------------------------------------------------------------------ a body that starves the timer

#[tokio::test(start_paused = true)]
async fn a_timed_attempt_fires_under_a_body_that_exhausts_the_coop_budget_paused() {
    let policy = exact(RetryPolicy::builder().max_attempts(1).timeout(50 * MS));
    let t0 = Instant::now();
    let out = guarded(async {
        let mut call = Call::new(&policy);
        call.attempt_timed(busy(Some(MS / 10))).await
    })
    .await;
    assert!(is_elapsed(&out.unwrap_err()));
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_times_out_a_body_that_exhausts_the_coop_budget_paused() {
    let policy = exact(RetryPolicy::builder().max_attempts(2).timeout(50 * MS));
    let calls = Cell::new(0);
    let t0 = Instant::now();
    let out = guarded(
        policy
            .retry(|| {
                calls.set(calls.get() + 1);
                busy(Some(MS / 10))
            })
            .into_future(),
    )
    .await;
    assert!(is_elapsed(&out.unwrap_err()));
    assert_eq!(calls.get(), 2, "both attempts were cut");
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn a_timed_attempt_fires_under_a_busy_body_on_the_real_clock() {
    let policy = exact(RetryPolicy::builder().max_attempts(1).timeout(20 * MS));
    let out = guarded(async {
        let mut call = Call::new(&policy);
        call.attempt_timed(busy(None)).await
    })
    .await;
    assert!(is_elapsed(&out.unwrap_err()));
    let out = guarded(policy.retry(|| busy(None)).into_future()).await;
    assert!(is_elapsed(&out.unwrap_err()));
}

// ------------------------------------------------------------------ a timeout is a failure

/// A hanging dependency opens the breaker even when the call does not retry timeouts.
#[tokio::test(start_paused = true)]
async fn a_timeout_is_a_breaker_failure_even_when_not_retried() {
    let policy = exact(RetryPolicy::builder().max_attempts(3).timeout(10 * MS));
    let hang = || std::future::pending::<io::Result<()>>();

    // Through `Call`, as the generated code drives it.
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .build()
        .unwrap();
    for _ in 0..2 {
        let mut call = Call::new(&policy);
        let permit = breaker.try_acquire().ok();
        let res = call.attempt_timed(hang()).await;
        let guards = Guards::NONE.breaker(&breaker, permit);
        let decision = call.decide(
            "hang",
            res,
            |e| !is_elapsed(e),
            |_| false,
            |_| None,
            |_, _, _| {},
            guards,
        );
        assert!(matches!(decision, Decision::Return(Err(ref e)) if is_elapsed(e)));
    }
    assert_eq!(breaker.state(), BreakerState::Open);

    // Through the closure API.
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .build()
        .unwrap();
    for _ in 0..2 {
        let out = policy
            .retry(hang)
            .when(|e: &io::Error| !is_elapsed(e))
            .circuit_breaker(&breaker)
            .await;
        assert!(is_elapsed(&out.unwrap_err()));
    }
    assert_eq!(breaker.state(), BreakerState::Open);
}
