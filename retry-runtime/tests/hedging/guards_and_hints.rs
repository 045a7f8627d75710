//! Hedged copies beside the guards and the hints: breaker permits, a quantile delay, per-copy
//! timeouts, a second copy's hint, payments refunded, and the deadline.

use super::*;

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
