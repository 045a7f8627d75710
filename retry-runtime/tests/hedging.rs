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

#[tokio::test(start_paused = true)]
async fn each_copy_takes_its_own_breaker_permit() {
    let policy = hedged(50 * MS, 3);
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    // Two copies both fail (retryably): two failures recorded, the breaker opens.
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                sleep(if n == 1 { 70 * MS } else { 30 * MS }).await;
                Err(io::ErrorKind::ConnectionReset.into())
            }
        })
        .circuit_breaker(&breaker)
        .await;
    assert!(out.is_err());
    assert_eq!(breaker.state(), retry_runtime::BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_p95_delay_follows_the_latencies_seen() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .idempotent(true)
        .hedge_after(HedgeAfter::quantile(95.0))
        .build()
        .unwrap();
    // Warm up: 100 calls taking 10 ms.
    for _ in 0..100 {
        let out = policy
            .retry(|| answer(&[10, 10], context().unwrap().attempt()))
            .await;
        assert_eq!(out.unwrap(), 1);
    }
    let p95 = policy.latencies().quantile(0.95).unwrap();
    assert!(p95 >= 10 * MS && p95 < 13 * MS, "{p95:?}");
    // A stuck call hedges at about 10 ms, not at the 100 ms starting value.
    let t0 = Instant::now();
    let out = policy
        .retry(|| answer(&[5000, 10], context().unwrap().attempt()))
        .await;
    assert_eq!(out.unwrap(), 2);
    // (Paused timers fire on whole milliseconds.)
    let took = t0.elapsed().checked_sub(10 * MS).unwrap();
    assert!(took >= p95 && took <= p95 + MS, "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn a_per_attempt_timeout_cuts_each_copy_on_its_own() {
    let policy = hedged_builder(60 * MS, 3)
        .timeout(100 * MS)
        .build()
        .unwrap();
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            answer(&[1000, 1000, 30], n)
        })
        .await;
    // Copy 1: 0..100 (cut); copy 2 (hedge) from 60; copy 1's timeout at 100 leads to a retry
    // after 20 ms: attempt 3 at 120, answering at 150.
    assert_eq!(out.unwrap(), 3);
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 60 * MS), (3, 120 * MS)]
    );
}

/// Two copies fail one after the other while attempts are left: the first failure schedules
/// the retry; the second, while that retry waits for its backoff, must not schedule another
/// over it (one timer): one retry starts, so one `on_retry`, one payment from the budget, and
/// it starts at the end of the first failure's backoff.
#[tokio::test(start_paused = true)]
async fn a_second_copy_failing_while_a_retry_waits_does_not_pay_or_delay_it_again() {
    let policy = hedged(50 * MS, 4);
    let budget = RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(10)
        .build()
        .unwrap();
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let retries = Cell::new(0);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            // The hedge fails at 80 ms, while the retry waits.
            two_failing_copies(n, io::ErrorKind::ConnectionReset)
        })
        .on_retry(|_: &io::Error, _, _| retries.set(retries.get() + 1))
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 90 * MS)]
    );
    assert_eq!(retries.get(), 1, "one retry was made");
    // The hedge paid 10; the one retry paid 10 and was refunded by its success.
    assert_eq!(budget.available(), 90);
}

/// As above, but the second failure carries a server hint (a `Retry-After`): the retry already
/// due starts no earlier than that hint asks, a floor as for any failure.
#[tokio::test(start_paused = true)]
async fn a_second_copys_hint_is_a_floor_under_the_retry_already_due() {
    let policy = hedged(50 * MS, 4);
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            // The hedge fails at 80 ms asking for 100 ms: not before 180 ms.
            two_failing_copies(n, io::ErrorKind::ConnectionRefused)
        })
        .retry_after(|e: &io::Error| {
            (e.kind() == io::ErrorKind::ConnectionRefused).then_some(100 * MS)
        })
        .await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 180 * MS)]
    );
}

/// A retry decided (and paid) while another copy runs, that never starts because that copy's
/// non-retryable error ends the call first: an attempt never made costs nothing, its payment
/// comes back (the hedge's, made, does not).
#[tokio::test(start_paused = true)]
async fn a_retry_paid_but_never_made_is_refunded_when_another_copy_ends_the_call() {
    let policy = hedged(50 * MS, 4);
    let budget = RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(10)
        .build()
        .unwrap();
    let started = Cell::new(0);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.set(n);
            // The first failure pays a retry, due at 90 ms; the hedge (paid) fails for good.
            two_failing_copies(n, io::ErrorKind::PermissionDenied)
        })
        .retry_if(|e: &io::Error| e.kind() != io::ErrorKind::PermissionDenied)
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(started.get(), 2, "the retry was never made");
    assert_eq!(budget.available(), 90, "only the hedge is paid for");
}

/// A hedge the budget paid for but the breaker then turned away is not made: its cost comes
/// back, and the call, which made one attempt and succeeded, is a first-try success that
/// deposits `success_deposit` (only a call that hedged deposits nothing).
#[tokio::test(start_paused = true)]
async fn a_hedge_turned_away_after_its_payment_leaves_a_first_try_success() {
    let policy = hedged(50 * MS, 3);
    let budget = RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(10)
        .success_deposit(1)
        .build()
        .unwrap();
    assert!(budget.try_withdraw(false));
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(1))
        .half_open_probes(1)
        .build()
        .unwrap();
    breaker.record(breaker.try_acquire().unwrap(), false);
    sleep(Duration::from_secs(1)).await;
    let started = Cell::new(0);
    let out: Result<u32, Fails> = policy
        .retry(|| {
            started.set(started.get() + 1);
            async {
                sleep(100 * MS).await;
                Ok(1)
            }
        })
        .circuit_breaker(&breaker)
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap(), 1);
    assert_eq!(started.get(), 1, "the hedge was turned away by the breaker");
    assert_eq!(
        budget.available(),
        91,
        "refunded, and a first-try success's deposit"
    );
}

#[derive(Debug)]
struct Fails;
impl From<retry_runtime::BreakerOpen> for Fails {
    fn from(_: retry_runtime::BreakerOpen) -> Self {
        Fails
    }
}
impl From<retry_runtime::Elapsed> for Fails {
    fn from(_: retry_runtime::Elapsed) -> Self {
        Fails
    }
}

/// As above, with a hint whose wait would end past `max_elapsed`: the retry already due is not
/// pushed past the call's deadline (no attempt starts after it); it starts when it was due.
#[tokio::test(start_paused = true)]
async fn a_second_copys_hint_never_pushes_the_retry_past_the_deadline() {
    let policy = hedged_builder(50 * MS, 4)
        .max_elapsed(150 * MS)
        .build()
        .unwrap();
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            // The hedge fails at 80 ms asking for 100 ms: past the 150 ms deadline.
            two_failing_copies(n, io::ErrorKind::ConnectionRefused)
        })
        .retry_after(|e: &io::Error| {
            (e.kind() == io::ErrorKind::ConnectionRefused).then_some(100 * MS)
        })
        .without_timeout()
        .await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 90 * MS)]
    );
}

/// An answer that is ready when the hedge's timer fires (the same instant, or the same poll):
/// the call has its answer, so no hedge starts (none is paid from the budget, sent, or counted),
/// and the call is a first-try success.
#[tokio::test(start_paused = true)]
async fn no_hedge_starts_when_the_answer_is_ready_as_its_timer_fires() {
    let policy = hedged(50 * MS, 3);
    let budget = RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(10)
        .success_deposit(1)
        .build()
        .unwrap();
    assert!(budget.try_withdraw(false));
    let started = Cell::new(0);
    let out: io::Result<u32> = policy
        .retry(|| {
            started.set(started.get() + 1);
            let n = started.get();
            async move {
                sleep(50 * MS).await;
                Ok(n)
            }
        })
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap(), 1);
    assert_eq!(started.get(), 1, "a hedge was started for an answered call");
    assert_eq!(budget.available(), 91, "a first-try success's deposit");
}

/// A retry decided while a hedge runs, then turned away (the first copy's failure opened the
/// breaker): its payment comes back, but the hedge was made and paid, and it is the hedge that
/// answers. The call hedged: no `success_deposit` (only a first-try success deposits).
#[tokio::test(start_paused = true)]
async fn a_retry_turned_away_alongside_a_hedge_leaves_the_call_hedged() {
    let policy = hedged(50 * MS, 4);
    let budget = RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(10)
        .success_deposit(1)
        .build()
        .unwrap();
    assert!(budget.try_withdraw(false));
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = Cell::new(0);
    let out: Result<u32, Fails> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.set(n);
            async move {
                if n == 1 {
                    // Fails at 70 ms: the breaker opens; a retry is paid, due at 90 ms, and
                    // turned away then.
                    sleep(70 * MS).await;
                    Err(Fails)
                } else {
                    // The hedge, started (and paid) at 50 ms, answers at 100 ms.
                    sleep(50 * MS).await;
                    Ok(n)
                }
            }
        })
        .circuit_breaker(&breaker)
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(started.get(), 2, "the retry was turned away");
    assert_eq!(
        budget.available(),
        80,
        "the hedge paid for, the retry refunded, no deposit: the call hedged"
    );
}

/// As above, with a hint whose wait ends exactly at the deadline: a sleep may not end there
/// (`after_failure_within` refuses it: no time would be left for the attempt), so the retry
/// already due is not pushed to it; it starts when it was due, and answers.
#[tokio::test(start_paused = true)]
async fn a_second_copys_hint_ending_at_the_deadline_does_not_push_the_retry_to_it() {
    let policy = hedged_builder(50 * MS, 4)
        .max_elapsed(150 * MS)
        .build()
        .unwrap();
    let t0 = Instant::now();
    let started = RefCell::new(vec![]);
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            started.borrow_mut().push((n, t0.elapsed()));
            // The hedge fails at 80 ms asking for 70 ms: exactly the 150 ms deadline.
            two_failing_copies(n, io::ErrorKind::ConnectionRefused)
        })
        .retry_after(|e: &io::Error| {
            (e.kind() == io::ErrorKind::ConnectionRefused).then_some(70 * MS)
        })
        .await;
    assert_eq!(
        *started.borrow(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 90 * MS)]
    );
    assert_eq!(out.unwrap(), 3);
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
