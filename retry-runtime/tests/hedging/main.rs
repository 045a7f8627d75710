//! Hedging through the closure API, under tokio's paused clock: when no attempt has answered
//! within `hedge_after`, the next starts alongside; the first accepted answer wins and the other
//! copies are dropped; copies share the call's key; the budget pays for hedges.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::time::Duration;

use retry_runtime::{
    Backoff, CircuitBreaker, HedgeAfter, Jitter, RetryBudget, RetryPolicy, RetryPolicyBuilder,
    context,
};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

fn hedged(after: Duration, max_attempts: u32) -> RetryPolicy {
    hedged_builder(after, max_attempts).build().unwrap()
}

/// [`hedged`]'s settings, for a test that adds its own: a fixed 20 ms backoff, no jitter.
fn hedged_builder(after: Duration, max_attempts: u32) -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(20 * MS)
        .backoff(Backoff::Fixed)
        .jitter(Jitter::None)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(after))
}

/// Attempt `n` of the two-failing-copies tests (hedge after 50 ms): the first fails at 70 ms
/// (`ConnectionReset`), so its retry is due at 90 ms; the second, the hedge started at 50 ms,
/// fails 30 ms later (at 80 ms) with `second`; any later attempt answers `Ok(n)` after 10 ms.
async fn two_failing_copies(n: u32, second: io::ErrorKind) -> io::Result<u32> {
    match n {
        1 => {
            sleep(70 * MS).await;
            Err(io::ErrorKind::ConnectionReset.into())
        }
        2 => {
            sleep(30 * MS).await;
            Err(second.into())
        }
        _ => {
            sleep(10 * MS).await;
            Ok(n)
        }
    }
}

/// Counts its drops: a copy's future holds one, so a dropped (cancelled) copy is seen.
struct DropFlag(Rc<Cell<u32>>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// An attempt that takes `took[attempt - 1]` and answers `Ok(attempt)`.
async fn answer(took: &[u64], attempt: u32) -> io::Result<u32> {
    sleep(Duration::from_millis(took[attempt as usize - 1])).await;
    Ok(attempt)
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_attempt_is_hedged_and_the_first_answer_wins() {
    let policy = hedged(50 * MS, 3);
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            answer(&[1000, 10, 10], n)
        })
        .await;
    assert_eq!(out.unwrap(), 2, "the hedge answered first");
    assert_eq!(t0.elapsed(), 60 * MS, "50 ms hedge delay + 10 ms");
    assert_eq!(*started.borrow(), [(1, Duration::ZERO), (2, 50 * MS)]);
}

#[tokio::test(start_paused = true)]
async fn a_fast_call_is_never_hedged() {
    let policy = hedged(50 * MS, 3);
    let calls = Cell::new(0);
    for _ in 0..20 {
        let out = policy
            .retry(|| {
                calls.set(calls.get() + 1);
                answer(&[49, 1, 1], context().unwrap().attempt())
            })
            .await;
        assert_eq!(out.unwrap(), 1);
    }
    assert_eq!(calls.get(), 20);
}

#[tokio::test(start_paused = true)]
async fn the_losing_copy_is_dropped_and_its_side_effect_stops() {
    let policy = hedged(50 * MS, 3);
    let drops = Rc::new(Cell::new(0));
    let effects = Rc::new(Cell::new(0));
    let out = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            let (flag, effects) = (DropFlag(drops.clone()), effects.clone());
            async move {
                let _flag = flag;
                sleep(if n == 1 { 200 * MS } else { 10 * MS }).await;
                effects.set(effects.get() + 1); // the side effect, after the wait
                Ok::<_, io::Error>(n)
            }
        })
        .await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(drops.get(), 2, "the winner and the loser are both gone");
    sleep(Duration::from_secs(1)).await;
    assert_eq!(effects.get(), 1, "only the winner's side effect happened");
}

#[tokio::test(start_paused = true)]
async fn max_attempts_counts_the_copies() {
    let policy = hedged(50 * MS, 3);
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            answer(&[500, 500, 500], n)
        })
        .await;
    assert_eq!(out.unwrap(), 1, "the first copy answers first at 500 ms");
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 100 * MS)],
        "a hedge every 50 ms, never more than max_attempts"
    );
}

#[tokio::test(start_paused = true)]
async fn copies_carry_one_key_and_their_own_attempt() {
    let policy = hedged(10 * MS, 3);
    let seen = RefCell::new(vec![]);
    let out = policy
        .retry(|| {
            let ctx = context().unwrap();
            seen.borrow_mut()
                .push((ctx.attempt(), ctx.idempotency_key()));
            async move {
                // Inside the copy, while it is polled: still its own number and the call's key.
                sleep(100 * MS).await;
                let inner = context().unwrap();
                assert_eq!(inner.attempt(), ctx.attempt());
                assert_eq!(inner.idempotency_key(), ctx.idempotency_key());
                Ok::<_, io::Error>(inner.attempt())
            }
        })
        .await;
    assert_eq!(out.unwrap(), 1);
    let seen = seen.borrow();
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(seen.iter().all(|s| s.1 == seen[0].1), "{seen:?}");
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_call_drops_every_copy() {
    let policy = hedged(10 * MS, 3);
    let drops = Rc::new(Cell::new(0));
    let made = Cell::new(0);
    let call = policy.retry(|| {
        made.set(made.get() + 1);
        let flag = DropFlag(drops.clone());
        async move {
            let _flag = flag;
            std::future::pending::<io::Result<()>>().await
        }
    });
    assert!(tokio::time::timeout(25 * MS, call).await.is_err());
    assert_eq!(made.get(), 3);
    assert_eq!(drops.get(), 3, "every copy was dropped with the call");
}

#[tokio::test(start_paused = true)]
async fn the_budget_pays_for_hedges_and_stops_them() {
    let policy = hedged(50 * MS, 3);
    // Room for exactly one hedge.
    let budget = RetryBudget::builder()
        .max_tokens(5)
        .retry_cost(5)
        .success_deposit(1)
        .build()
        .unwrap();
    let mut starts = vec![];
    for _ in 0..2 {
        let made = Cell::new(0);
        let out = policy
            .retry(|| {
                made.set(made.get() + 1);
                answer(&[200, 200, 200], context().unwrap().attempt())
            })
            .budget(&budget)
            .await;
        assert_eq!(out.unwrap(), 1);
        starts.push(made.get());
    }
    assert_eq!(
        starts,
        [2, 1],
        "the first call's hedge emptied the budget; the second waits"
    );
    assert_eq!(
        budget.available(),
        1,
        "the hedge is not paid back and its call deposits nothing; the second call, unhedged, deposits 1"
    );
}

#[tokio::test(start_paused = true)]
async fn a_retryable_error_starts_the_next_attempt_after_the_backoff_while_the_other_runs() {
    let policy = hedged(50 * MS, 3);
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            async move {
                match n {
                    1 => {
                        sleep(300 * MS).await;
                        Ok(1)
                    }
                    2 => {
                        sleep(10 * MS).await;
                        Err(io::ErrorKind::ConnectionReset.into())
                    }
                    _ => {
                        sleep(100 * MS).await;
                        Ok(3)
                    }
                }
            }
        })
        .await;
    // Copy 2 started at 50 ms and failed at 60 ms; the retry (attempt 3) starts after the 20 ms
    // backoff, at 80 ms, and answers at 180 ms, before copy 1 (300 ms).
    assert_eq!(out.unwrap(), 3);
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 80 * MS)]
    );
    assert_eq!(t0.elapsed(), 180 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_non_retryable_error_ends_the_call_with_copies_in_flight() {
    let policy = hedged(50 * MS, 3);
    let drops = Rc::new(Cell::new(0));
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            let flag = DropFlag(drops.clone());
            async move {
                let _flag = flag;
                if n == 1 {
                    sleep(300 * MS).await;
                    Ok(1)
                } else {
                    sleep(10 * MS).await;
                    Err(io::ErrorKind::PermissionDenied.into())
                }
            }
        })
        .retry_if(|e: &io::Error| e.kind() != io::ErrorKind::PermissionDenied)
        .await;
    assert_eq!(out.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(drops.get(), 2);
}

#[tokio::test(start_paused = true)]
async fn when_every_copy_fails_the_last_error_is_returned() {
    let policy = hedged(50 * MS, 2);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                sleep(if n == 1 { 100 * MS } else { 80 * MS }).await;
                Err(io::Error::other(format!("copy {n}")))
            }
        })
        .await;
    // Copy 1 fails first (100 ms) while copy 2 runs (50..130 ms): no attempt is left, so the
    // call waits for copy 2, whose error is the last.
    assert_eq!(out.unwrap_err().to_string(), "copy 2");
}

#[tokio::test(start_paused = true)]
async fn retry_if_ok_rejects_a_copys_answer_and_another_copy_wins() {
    let policy = hedged(50 * MS, 3);
    let out: io::Result<&str> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                if n == 1 {
                    sleep(100 * MS).await;
                    Ok("done")
                } else {
                    sleep(10 * MS).await;
                    Ok("pending")
                }
            }
        })
        .retry_if_ok(|v| *v == "pending")
        .await;
    assert_eq!(out.unwrap(), "done");
}

#[derive(Debug, PartialEq, Eq)]
enum Answer {
    TimedOut,
    Refused,
    Bad,
}

impl From<retry_runtime::Elapsed> for Answer {
    fn from(_: retry_runtime::Elapsed) -> Self {
        Answer::TimedOut
    }
}

impl From<retry_runtime::BreakerOpen> for Answer {
    fn from(_: retry_runtime::BreakerOpen) -> Self {
        Answer::Refused
    }
}

mod copies_apart;
mod guards_and_hints;
