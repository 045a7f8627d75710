//! Each copy on its own: its timeout, its cooperative budget, its breaker and throttle
//! outcomes, its attempt number, and what a copy's error that is no failure leaves kept.

use super::*;

/// One copy times out; the other, still in flight, then answers with an error the call does not
/// retry: that answer is the dependency's (not a failure for the breaker, as without hedging).
/// The first copy's timeout is its own, not the next copy's to end.
#[tokio::test(start_paused = true)]
async fn a_copys_timeout_is_not_blamed_on_the_next_copy_to_end() {
    let policy = hedged_builder(50 * MS, 2)
        .timeout(100 * MS)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let out: Result<u32, Answer> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                if n == 1 {
                    // Cut at 100 ms (a failure).
                    sleep(Duration::from_secs(10)).await;
                    Ok(n)
                } else {
                    // The hedge, from 50 ms: a definite answer at 110 ms.
                    sleep(60 * MS).await;
                    Err(Answer::Bad)
                }
            }
        })
        .retry_if(|e: &Answer| *e != Answer::Bad)
        .circuit_breaker(&breaker)
        .await;
    assert_eq!(out.unwrap_err(), Answer::Bad);
    assert_eq!(
        breaker.state(),
        retry_runtime::BreakerState::Closed,
        "one failure (the timeout), then an answer"
    );
}

/// A copy cut by its timeout is a failure of the dependency even when the call does not retry
/// timeouts: the breaker counts it (the copy's limit tells the engine the attempt timed out).
#[tokio::test(start_paused = true)]
async fn a_copy_cut_by_its_timeout_and_not_retried_is_a_breaker_failure() {
    let policy = hedged_builder(50 * MS, 2)
        .timeout(100 * MS)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let t0 = Instant::now();
    let out: Result<u32, Answer> = policy
        .retry(|| async {
            sleep(Duration::from_secs(10)).await;
            Ok(0)
        })
        .retry_if(|e: &Answer| *e != Answer::TimedOut)
        .circuit_breaker(&breaker)
        .await;
    assert_eq!(out.unwrap_err(), Answer::TimedOut);
    assert_eq!(t0.elapsed(), 100 * MS, "the first copy's limit");
    assert_eq!(breaker.state(), retry_runtime::BreakerState::Open);
}

/// As above, with a hint past what an `Instant` holds (`max_delay` at `Duration::MAX`, a
/// `Retry-After` of centuries): the retry already due is pushed to "never, in practice", as a
/// retry decided on that hint alone sleeps; it does not start when it was due.
#[tokio::test(start_paused = true)]
async fn a_second_copys_hint_past_the_instants_range_still_holds_the_retry_back() {
    let policy = hedged_builder(50 * MS, 4)
        .max_delay(Duration::MAX)
        .build()
        .unwrap();
    let started = Cell::new(0);
    let call = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.set(n);
            // The hedge fails at 80 ms asking for `Duration::MAX`.
            two_failing_copies(n, io::ErrorKind::ConnectionRefused)
        })
        .retry_after(|e: &io::Error| {
            (e.kind() == io::ErrorKind::ConnectionRefused).then_some(Duration::MAX)
        });
    let out = tokio::time::timeout(Duration::from_secs(3600), call).await;
    assert!(out.is_err(), "the call ended: {out:?}");
    assert_eq!(
        started.get(),
        2,
        "the retry started before the server allows"
    );
}

/// A copy that is always ready to go on (a busy channel, a stream) uses up the task's
/// cooperative budget in every poll: the call's timer, polled after the copies, must still fire
/// (as a per-attempt timeout does), or no hedge ever starts beside it.
#[tokio::test(start_paused = true)]
async fn a_copy_that_uses_up_the_coop_budget_does_not_hold_back_the_hedge() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let policy = hedged(50 * MS, 2);
    let done = Arc::new(AtomicBool::new(false));
    // The clock moves on while the call's task keeps yielding: 2 s in 10 ms steps.
    let clock = tokio::spawn({
        let done = done.clone();
        async move {
            for _ in 0..200 {
                tokio::time::advance(10 * MS).await;
            }
            done.store(true, Ordering::SeqCst);
        }
    });
    let call = policy.retry(|| {
        let n = context().unwrap().attempt();
        async move {
            if n == 1 {
                // Always ready to go on: only the cooperative budget stops it.
                while !STOP.with(Cell::get) {
                    tokio::task::consume_budget().await;
                }
            }
            io::Result::Ok(n)
        }
    });
    let gave_up = std::future::poll_fn(|cx| {
        if done.load(Ordering::SeqCst) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    });
    let out = tokio::select! {
        out = call => Some(out.unwrap()),
        () = gave_up => None,
    };
    clock.abort();
    assert_eq!(out, Some(2), "the hedge never started");
}

thread_local! {
    static STOP: Cell<bool> = const { Cell::new(false) };
}

/// As above, with a hedge that answers after a timer of its own: the copy that uses up the
/// cooperative budget in every poll must not starve it (copies polled after it would find the
/// budget spent, and their timers never fire).
#[tokio::test(start_paused = true)]
async fn a_copy_that_uses_up_the_coop_budget_does_not_starve_the_other_copies() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let policy = hedged(50 * MS, 2);
    let done = Arc::new(AtomicBool::new(false));
    let clock = tokio::spawn({
        let done = done.clone();
        async move {
            for _ in 0..200 {
                tokio::time::advance(10 * MS).await;
            }
            done.store(true, Ordering::SeqCst);
        }
    });
    let call = policy.retry(|| {
        let n = context().unwrap().attempt();
        async move {
            if n == 1 {
                while !STOP.with(Cell::get) {
                    tokio::task::consume_budget().await;
                }
            } else {
                sleep(10 * MS).await;
            }
            io::Result::Ok(n)
        }
    });
    let gave_up = std::future::poll_fn(|cx| {
        if done.load(Ordering::SeqCst) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    });
    let out = tokio::select! {
        out = call => Some(out.unwrap()),
        () = gave_up => None,
    };
    clock.abort();
    assert_eq!(out, Some(2), "the hedge's answer never came");
}

/// Hedging against a healthy dependency never makes the adaptive throttle shed: a losing copy,
/// dropped before it answered, was not refused by the dependency, so the throttle counts it as
/// accepted. (Counted as a request and never as an accept, three copies per call gave
/// requests = 3 × accepts and, with K = 2, shed a quarter of the calls' first attempts.)
#[tokio::test(start_paused = true)]
async fn losing_copies_do_not_make_the_throttle_shed_a_healthy_dependency() {
    // The throttle's draws, seeded: unseeded, the first calls' hedges were shed a varying
    // number of times (596 requests once, against the bound of 597 below).
    retry_runtime::seed_rng(11);
    // The time window alone (two minutes), so that its counts are every copy's.
    let throttle = retry_runtime::AdaptiveThrottle::builder()
        .window_requests(u32::MAX)
        .build()
        .unwrap();
    let policy = hedged(MS, 3);
    for _ in 0..200 {
        let out: Result<u32, retry_runtime::Throttled> = policy
            .retry(|| async {
                sleep(10 * MS).await;
                Ok(1)
            })
            .throttle(&throttle)
            .without_timeout()
            .await;
        assert_eq!(out, Ok(1), "throttle counts {:?}", throttle.counts());
    }
    let (requests, accepts) = throttle.counts();
    // Every copy sent was answered or cancelled, and both count as accepted; only the first
    // call's hedges may be shed (before any accept, the throttle sheds at random).
    assert!(
        requests >= 597 && accepts + 3 >= requests,
        "{requests} {accepts}"
    );
    assert!(throttle.rejection_probability() <= 0.0);
}

/// Issue 25, finding 1: a copy that fails while a later copy runs is reported as itself. The
/// first attempt fails at 70 ms while the hedge (attempt 2, started at 50 ms) still runs: the
/// retry it leads to is reported, to `on_retry` and in the retry event, as attempt 1's failure,
/// not as the newest copy's.
#[tokio::test(start_paused = true)]
async fn on_retry_sees_the_attempt_of_the_copy_that_failed_not_the_newest() {
    let policy = hedged(50 * MS, 3);
    let seen = RefCell::new(vec![]);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                match n {
                    1 => {
                        sleep(70 * MS).await;
                        Err(io::ErrorKind::ConnectionReset.into())
                    }
                    2 => {
                        sleep(1000 * MS).await;
                        Ok(2)
                    }
                    _ => {
                        sleep(10 * MS).await;
                        Ok(n)
                    }
                }
            }
        })
        .on_retry(|_: &io::Error, ctx, _| seen.borrow_mut().push(ctx.attempt()))
        .await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(*seen.borrow(), [1], "the copy that failed was attempt 1");
}

/// Issue 25, finding 6: a quantile `hedge_after` waits its starting delay (100 ms) until the
/// estimate has samples; beside a shorter `timeout`, every attempt is cut before it, so no call
/// ever hedges and no latency above the timeout is ever seen. `build` refuses it, naming the
/// field; a starting delay below the timeout builds.
#[test]
fn a_quantiles_starting_delay_not_below_the_timeout_is_refused() {
    let p95 = HedgeAfter::quantile(95.0);
    let err = RetryPolicy::builder()
        .timeout(50 * MS)
        .idempotent(true)
        .hedge_after(p95)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "hedge_after");
    assert!(err.to_string().contains("starting delay"), "{err}");
    assert!(
        RetryPolicy::builder()
            .timeout(150 * MS)
            .idempotent(true)
            .hedge_after(p95)
            .build()
            .is_ok()
    );
    let short_start = HedgeAfter::Quantile {
        percentile: 95.0,
        floor: MS,
        start: 20 * MS,
    };
    assert!(
        RetryPolicy::builder()
            .timeout(50 * MS)
            .idempotent(true)
            .hedge_after(short_start)
            .build()
            .is_ok()
    );
}

/// Hooks for which an error saying "left behind" is the client's own doing (not a failure, as
/// the gRPC layer says of a copy the replay cap left behind), and under which nothing more may
/// start after a failure (the cap's commit): the copies in flight answer.
#[derive(Default)]
struct LeftBehindIsNoFailure {
    failed: bool,
}
impl retry_runtime::Hooks<u32, io::Error> for LeftBehindIsNoFailure {
    fn retry_if(&mut self, _: &io::Error) -> bool {
        self.failed = true;
        true
    }
    fn counts_as_failure(&mut self, error: &io::Error) -> bool {
        error.to_string() != "left behind"
    }
    fn retry_refused(&mut self) -> Option<retry_runtime::GiveUpReason> {
        self.failed
            .then_some(retry_runtime::GiveUpReason::NotRetryable)
    }
}

/// A copy's real failure, kept while another copy runs, is the call's outcome even when the
/// copy that ends last fails with an error that is not the dependency's doing
/// (`Hooks::counts_as_failure`): that one replaces no kept outcome and records nothing for the
/// breaker. (A call keeps its outcome when it has a breaker or an adaptive throttle.)
#[tokio::test(start_paused = true)]
async fn an_error_that_is_no_failure_does_not_replace_a_kept_real_one() {
    let policy = hedged(50 * MS, 2);
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                // Copy 1 fails at 100 ms for real; copy 2 (50..130 ms) was left behind.
                sleep(if n == 1 { 100 * MS } else { 80 * MS }).await;
                Err(io::Error::other(if n == 1 {
                    "unavailable"
                } else {
                    "left behind"
                }))
            }
        })
        .hooks(LeftBehindIsNoFailure::default())
        .circuit_breaker(&breaker)
        .await;
    assert_eq!(out.unwrap_err().to_string(), "unavailable");
    assert_eq!(
        breaker.state(),
        retry_runtime::BreakerState::Closed,
        "one failure of two: the left-behind copy counted for nothing"
    );
}
