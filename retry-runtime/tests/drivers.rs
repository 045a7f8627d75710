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

use retry_runtime::__private::{Admission, Call, Decision, Guards};
use retry_runtime::{
    BreakerState, CircuitBreaker, Elapsed, FnHooks, Jitter, RetryPolicy, RetryPolicyBuilder,
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
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(2)
            .timeout(50 * MS)
            .idempotent(true),
    );
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
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .timeout(10 * MS)
            .idempotent(true),
    );
    let hang = || std::future::pending::<io::Result<()>>();

    // Through `Call`, as the generated code drives it.
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .build()
        .unwrap();
    for _ in 0..2 {
        let mut call = Call::new(&policy);
        let permit = Admission::from(breaker.try_acquire());
        let res = call.attempt_timed(hang()).await;
        let guards = Guards::NONE.breaker(&breaker, permit);
        let decision = call.decide(
            "hang",
            &mut FnHooks::of(&res).retry_if(|e| !is_elapsed(e)),
            res,
            guards,
        );
        assert!(matches!(decision, Decision::Stop(Err(ref e)) if is_elapsed(e)));
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
            .retry_if(|e: &io::Error| !is_elapsed(e))
            .circuit_breaker(&breaker)
            .await;
        assert!(is_elapsed(&out.unwrap_err()));
    }
    assert_eq!(breaker.state(), BreakerState::Open);
}

// ------------------------------------------------------------------ deadlines already spent

/// A policy whose calls stop 100 ms in, with attempts that do not end by themselves.
fn outer_policy() -> RetryPolicy {
    exact(RetryPolicy::builder().max_attempts(1).max_elapsed(100 * MS))
}

/// An inner call made inside an outer attempt after the outer deadline passed: with a timeout,
/// its body is never polled (and the closure API never calls its operation); the call ends with
/// `Elapsed`, without retrying.
#[tokio::test(start_paused = true)]
async fn an_inherited_deadline_spent_on_entry_runs_no_timed_attempt() {
    let inner = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .timeout(50 * MS)
            .idempotent(true),
    );
    let outer = outer_policy();

    // Through `Call`.
    let polled = Cell::new(0);
    let res = outer
        .retry(|| async {
            sleep(150 * MS).await;
            let mut call = Call::new(&inner);
            let res = call
                .attempt_timed(async {
                    polled.set(polled.get() + 1);
                    Ok::<_, io::Error>(())
                })
                .await;
            match call.decide("inner", &mut FnHooks::of(&res), res, Guards::NONE) {
                Decision::Stop(r) => r,
                Decision::Retry(_) => panic!("no retry past the deadline"),
            }
        })
        .await;
    assert!(is_elapsed(&res.unwrap_err()));
    assert_eq!(polled.get(), 0, "the body was never polled");

    // Through the closure API.
    let made = Cell::new(0);
    let t0 = Instant::now();
    let res = outer
        .retry(|| async {
            sleep(150 * MS).await;
            inner
                .retry(|| {
                    made.set(made.get() + 1);
                    async { Ok::<_, io::Error>(()) }
                })
                .await
        })
        .await;
    assert!(is_elapsed(&res.unwrap_err()));
    assert_eq!(made.get(), 0, "the operation was never called");
    assert_eq!(t0.elapsed(), 150 * MS, "and nothing was waited for");
}

/// Without a timeout, a call always makes its first attempt (a call must try once), even under
/// a spent inherited deadline; it makes no retry past the deadline.
#[tokio::test(start_paused = true)]
async fn without_a_timeout_a_spent_deadline_allows_the_first_attempt_only() {
    let inner = exact(RetryPolicy::builder().max_attempts(3));
    let outer = outer_policy();
    let made = Cell::new(0);
    let res = outer
        .retry(|| async {
            sleep(150 * MS).await;
            inner
                .retry(|| {
                    made.set(made.get() + 1);
                    async { Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset)) }
                })
                .await
        })
        .await;
    assert_eq!(res.unwrap_err().kind(), io::ErrorKind::ConnectionReset);
    assert_eq!(made.get(), 1);
}

/// The call's own deadline spent between a decision and the next attempt (the wake-up came
/// late): with a timeout, that attempt ends as timed out without its body being polled.
#[tokio::test(start_paused = true)]
async fn an_own_deadline_spent_before_an_attempt_runs_no_timed_attempt() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(5)
            .timeout(50 * MS)
            .max_elapsed(500 * MS),
    );
    let mut call = Call::new(&policy);
    let polled = Cell::new(0);
    let body = || async {
        polled.set(polled.get() + 1);
        Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset))
    };
    let res = call.attempt_timed(body()).await;
    let Decision::Retry(d) = call.decide("own", &mut FnHooks::of(&res), res, Guards::NONE) else {
        panic!("a retry")
    };
    sleep(d + 600 * MS).await; // a very late wake-up
    let res = call.attempt_timed(body()).await;
    assert!(is_elapsed(res.as_ref().unwrap_err()));
    assert_eq!(polled.get(), 1, "the second body was never polled");
    assert!(matches!(
        call.decide("own", &mut FnHooks::of(&res), res, Guards::NONE,),
        Decision::Stop(Err(_))
    ));
}

// ------------------------------------------------------------------ extremes

#[tokio::test(start_paused = true)]
async fn duration_max_limits_do_not_overflow() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(MS)
            .max_delay(Duration::MAX)
            .timeout(Duration::MAX)
            .max_elapsed(Duration::MAX),
    );
    let mut n = 0;
    let out = policy
        .retry(|| {
            n += 1;
            let n = n;
            async move {
                if n < 3 {
                    Err(io::Error::from(io::ErrorKind::ConnectionReset))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
    assert_eq!(out.unwrap(), 3);
    let mut call = Call::new(&policy);
    assert_eq!(
        call.attempt_timed(async { Ok::<_, io::Error>(1) })
            .await
            .unwrap(),
        1
    );
}

// ------------------------------------------------------------------ the closure API's future

/// A finished future stays finished: polling it again panics (as futures combinators do) and
/// never runs the operation again.
#[tokio::test(start_paused = true)]
async fn polling_a_finished_retry_future_panics_and_runs_nothing() {
    let policy = exact(RetryPolicy::builder().max_attempts(2));
    let calls = Cell::new(0);
    let mut fut = pin!(
        policy
            .retry(|| {
                calls.set(calls.get() + 1);
                async { Ok::<_, io::Error>(1) }
            })
            .into_future()
    );
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(1))));
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = fut.as_mut().poll(&mut cx);
    }));
    let message = again.expect_err("polled after completion");
    let message = message
        .downcast_ref::<&str>()
        .map(ToString::to_string)
        .or_else(|| message.downcast_ref::<String>().cloned())
        .unwrap();
    assert!(message.contains("polled after completion"), "{message}");
    assert_eq!(calls.get(), 1);
}

/// Error types that cannot hold a timeout (`String`, `reqwest::Error`, `StatusCode`) work with
/// the closure API: `.without_timeout()` when the call needs no per-attempt limit, or
/// `.timeout_into(…)` to make the error of a timed-out attempt.
#[tokio::test(start_paused = true)]
async fn errors_without_from_elapsed_work_with_the_closure_api() {
    let untimed = exact(RetryPolicy::builder().max_attempts(3).delay(MS));
    let mut n = 0;
    let out: Result<u32, String> = untimed
        .retry(|| {
            n += 1;
            let n = n;
            async move {
                if n < 2 {
                    Err(format!("busy {n}"))
                } else {
                    Ok(n)
                }
            }
        })
        .without_timeout()
        .retry_if(|e| e.starts_with("busy"))
        .await;
    assert_eq!(out, Ok(2));

    let timed = exact(
        RetryPolicy::builder()
            .max_attempts(2)
            .delay(MS)
            .timeout(10 * MS),
    );
    let out: Result<u32, String> = timed
        .retry(std::future::pending)
        .timeout_into(|elapsed| format!("attempt {elapsed}"))
        .await;
    assert!(out.unwrap_err().starts_with("attempt"));
}

/// `.when`, `.retry_after` and `.notify` closures need no type annotation: the error type comes
/// from the operation.
#[tokio::test(start_paused = true)]
async fn closure_arguments_are_inferred_from_the_operation() {
    let policy = exact(RetryPolicy::builder().max_attempts(3).delay(MS));
    let mut notified = 0;
    let mut n = 0;
    let out = policy
        .retry(|| {
            n += 1;
            let n = n;
            async move {
                if n < 3 {
                    Err(io::Error::from(io::ErrorKind::ConnectionReset))
                } else {
                    Ok(n)
                }
            }
        })
        .retry_if(|e| e.kind() == io::ErrorKind::ConnectionReset)
        .retry_after(|e| (e.kind() == io::ErrorKind::ConnectionReset).then_some(MS))
        .on_retry(|e, ctx, _| {
            assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
            assert!(ctx.attempt() >= 1);
            notified += 1;
        })
        .await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(notified, 2);
}

// ------------------------------------------------------------------ what a spawned task inherits

/// Context and the inherited deadline follow the task that polls the call: a call spawned from
/// inside an attempt runs in another task and inherits neither.
#[tokio::test(start_paused = true)]
async fn a_call_spawned_from_an_attempt_inherits_neither_context_nor_deadline() {
    static INNER: RetryPolicy = match RetryPolicy::builder()
        .max_attempts(1)
        .timeout(Duration::from_millis(50))
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!("valid"),
    };
    let outer = outer_policy();
    let out = outer
        .retry(|| async {
            sleep(150 * MS).await; // the outer deadline (100 ms) is spent
            let spawned = tokio::spawn(async {
                let outer_context = retry_runtime::context();
                let ran = INNER.retry(|| async { Ok::<_, io::Error>("ran") }).await;
                (outer_context.is_none(), ran.ok())
            });
            Ok::<_, io::Error>(spawned.await.expect("joined"))
        })
        .await;
    assert_eq!(out.unwrap(), (true, Some("ran")));
}

// ------------------------------------------------------------------ the timer is armed lazily

/// An attempt that is ready at its first poll arms no timer: on a runtime without a time driver
/// (where creating a timer panics), a timed attempt that finishes at once still runs, through
/// both drivers.
#[test]
fn a_timed_attempt_ready_at_once_arms_no_timer() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime without timers");
    let policy = exact(RetryPolicy::builder().max_attempts(3).timeout(50 * MS));
    let out = rt.block_on(async {
        let mut call = Call::new(&policy);
        call.attempt_timed(async { Ok::<_, io::Error>(7) }).await
    });
    assert_eq!(out.unwrap(), 7);
    let out = rt.block_on(
        policy
            .retry(|| async { Ok::<_, io::Error>(8) })
            .into_future(),
    );
    assert_eq!(out.unwrap(), 8);
}

/// The limit counts from the attempt's start, not from when its timer is armed (its first
/// `Pending`): a body whose first poll takes 600 ms of a 1 s limit is cut 400 ms later.
#[tokio::test(start_paused = true)]
async fn the_limit_counts_from_the_attempts_start_not_from_arming_its_timer() {
    async fn slow_first_poll() -> io::Result<()> {
        advance_now(600 * MS);
        tokio::task::yield_now().await;
        sleep(Duration::from_secs(10)).await;
        Ok(())
    }
    let policy = exact(RetryPolicy::builder().max_attempts(1).timeout(1000 * MS));
    let t0 = Instant::now();
    let out = async {
        let mut call = Call::new(&policy);
        call.attempt_timed(slow_first_poll()).await
    }
    .await;
    assert!(is_elapsed(&out.unwrap_err()));
    assert_eq!(t0.elapsed(), 1000 * MS);
    let t0 = Instant::now();
    let out = policy.retry(slow_first_poll).await;
    assert!(is_elapsed(&out.unwrap_err()));
    assert_eq!(t0.elapsed(), 1000 * MS);
}

/// An untimed attempt begins without clearing the last attempt's flags (one addition): a
/// `Retry` from `Call::decide` must forget them, or a timeout's class would stick to the next
/// attempt, which the budget would then charge `timeout_cost` instead of `retry_cost`.
#[tokio::test(start_paused = true)]
async fn the_class_of_a_retried_attempt_is_not_the_next_ones() {
    use retry_runtime::{ErrorClass, RetryBudget};
    let policy = exact(RetryPolicy::builder().max_attempts(3));
    let budget = RetryBudget::builder().build().unwrap();
    let before = budget.available();
    let mut call = Call::new(&policy);
    for class in [ErrorClass::Timeout, ErrorClass::Transient] {
        let res: Result<(), ErrorClass> = call.attempt(async { Err(class) }).await;
        let mut hooks = FnHooks::of(&res).error_class(|class: &ErrorClass| *class);
        match call.decide("demo", &mut hooks, res, Guards::NONE.budget(&budget)) {
            Decision::Retry(delay) => call.sleep(delay).await,
            Decision::Stop(res) => panic!("stopped with {res:?}"),
        }
    }
    // A timeout's retry (10), then a transient error's (5).
    assert_eq!(before - budget.available(), 15);
}
