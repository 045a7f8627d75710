//! Overload control through the closure API, under tokio's paused clock: retry at one layer
//! (`one_layer`), the adaptive throttle and the bulkhead.

use std::cell::Cell;
use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use retry_runtime::{
    AdaptiveThrottle, Bulkhead, BulkheadFull, Jitter, RetryBudget, RetryPolicy, Throttled,
};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
enum Error {
    Down,
    Shed,
    Busy,
}

impl From<Throttled> for Error {
    fn from(_: Throttled) -> Self {
        Error::Shed
    }
}

impl From<BulkheadFull> for Error {
    fn from(_: BulkheadFull) -> Self {
        Error::Busy
    }
}

fn policy(attempts: u32, one_layer: bool) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(attempts)
        .delay(MS)
        .jitter(Jitter::None)
        .one_layer(one_layer)
        .build()
        .unwrap()
}

/// Three retrying layers over a leaf that always fails; the attempts that reach the leaf.
async fn chain(outer: &RetryPolicy, inner: &RetryPolicy) -> u32 {
    let leaf = Cell::new(0u32);
    let out: Result<(), Error> = outer
        .retry(|| async {
            inner
                .retry(|| async {
                    inner
                        .retry(|| async {
                            leaf.set(leaf.get() + 1);
                            Err::<(), _>(Error::Down)
                        })
                        .without_timeout()
                        .await
                })
                .without_timeout()
                .await
        })
        .without_timeout()
        .await;
    assert_eq!(out, Err(Error::Down));
    leaf.get()
}

#[tokio::test(start_paused = true)]
async fn one_layer_cuts_a_three_deep_chain_from_27_to_7_leaf_attempts() {
    let plain = policy(3, false);
    assert_eq!(chain(&plain, &plain).await, 27);
    let one = policy(3, true);
    // The top call's first two attempts reach the leaf once each; on its last, the middle
    // retries (its first two attempts reach the leaf once each), and on the middle's last the
    // leaf's caller retries: 1 + 1 + 1 + 1 + 3.
    assert_eq!(chain(&plain, &one).await, 7);
    assert_eq!(chain(&one, &one).await, 7, "the top call has no outer call");
}

#[tokio::test(start_paused = true)]
async fn one_layer_retries_normally_under_an_outer_call_on_its_last_attempt_or_with_none() {
    let single = policy(1, false);
    let inner = policy(4, true);
    let calls = Cell::new(0);
    let out: Result<(), Error> = single
        .retry(|| async {
            inner
                .retry(|| async {
                    calls.set(calls.get() + 1);
                    Err::<(), _>(Error::Down)
                })
                .without_timeout()
                .await
        })
        .without_timeout()
        .await;
    assert_eq!(out, Err(Error::Down));
    assert_eq!(
        calls.get(),
        4,
        "the outer call makes no retry: the inner one does"
    );
    // Outside any retrying call, the rule changes nothing.
    calls.set(0);
    let _ = inner
        .retry(|| async {
            calls.set(calls.get() + 1);
            Err::<(), _>(Error::Down)
        })
        .without_timeout()
        .await;
    assert_eq!(calls.get(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_shed_attempt_is_not_made_ends_the_call_and_is_refunded() {
    retry_runtime::seed_rng(3);
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    // The dependency refused everything for a while: the throttle sheds nearly every request.
    for _ in 0..10_000 {
        let _ = throttle.try_acquire();
    }
    assert!(throttle.rejection_probability() > 0.99);
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    let p = policy(5, false);
    let calls = Cell::new(0);
    let mut shed = 0;
    for _ in 0..20 {
        let out: Result<(), Error> = p
            .retry(|| async {
                calls.set(calls.get() + 1);
                Err(Error::Down)
            })
            .without_timeout()
            .budget(&budget)
            .throttle(&throttle)
            .await;
        if out == Err(Error::Shed) {
            shed += 1;
        }
    }
    assert!(
        shed == 20,
        "every call ends shed, never retried past it: {shed}"
    );
    // A call whose first attempt went through retries until a retry is shed; that retry's
    // tokens come back.
    assert_eq!(
        budget.available(),
        100,
        "what was paid for shed retries was refunded"
    );
    assert!(calls.get() < 20, "most attempts never reach the dependency");
}

#[tokio::test(start_paused = true)]
async fn the_throttle_hears_accepted_and_refused_attempts() {
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    // A dependency that accepted what it was sent: nothing is shed (a cold throttle sheds
    // after two refusals in a row: (2 − 0) / 3, the formula at small counts).
    for _ in 0..10 {
        throttle.try_acquire().unwrap();
        throttle.record(true);
    }
    let p = policy(3, false);
    let n = Cell::new(0);
    let out: Result<u32, Error> = p
        .retry(|| async {
            n.set(n.get() + 1);
            if n.get() < 3 {
                Err(Error::Down)
            } else {
                Ok(n.get())
            }
        })
        .without_timeout()
        .throttle(&throttle)
        .await;
    assert_eq!(out, Ok(3));
    assert_eq!(throttle.counts(), (13, 11), "three requests, one accepted");
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_counts_sleeping_retries_and_turns_the_next_call_away() {
    let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(2).build().unwrap());
    let made = Arc::new(AtomicU32::new(0));
    let slow = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_secs(10))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let spawn = |bulkhead: Arc<Bulkhead>, made: Arc<AtomicU32>, slow: RetryPolicy| {
        tokio::spawn(async move {
            slow.retry(|| {
                made.fetch_add(1, SeqCst);
                async { Err::<(), _>(Error::Down) }
            })
            .without_timeout()
            .bulkhead(&bulkhead)
            .await
        })
    };
    let a = spawn(bulkhead.clone(), made.clone(), slow.clone());
    let b = spawn(bulkhead.clone(), made.clone(), slow.clone());
    tokio::time::sleep(MS).await;
    // Both calls are asleep between retries, and hold their slots.
    assert_eq!(bulkhead.in_flight(), 2);
    assert_eq!(made.load(SeqCst), 2);
    let c = spawn(bulkhead.clone(), made.clone(), slow.clone());
    assert_eq!(
        c.await.unwrap(),
        Err(Error::Busy),
        "turned away, never retried"
    );
    assert_eq!(made.load(SeqCst), 2, "no attempt made for it");
    assert_eq!(a.await.unwrap(), Err(Error::Down));
    assert_eq!(b.await.unwrap(), Err(Error::Down));
    assert_eq!(bulkhead.in_flight(), 0, "slots freed when the calls end");
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_with_max_wait_lets_a_call_wait_for_a_slot() {
    let bulkhead = Bulkhead::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_millis(100))
        .build()
        .unwrap();
    let p = policy(1, false);
    let held = bulkhead.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    let (out, ()) = tokio::join!(
        p.retry(|| async { Ok::<_, Error>(5) })
            .without_timeout()
            .bulkhead(&bulkhead)
            .into_future(),
        async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            drop(held);
        }
    );
    assert_eq!(out, Ok(5));
    assert_eq!(t0.elapsed(), Duration::from_millis(30));
    let _held = bulkhead.try_acquire().unwrap();
    let out = p
        .retry(|| async { Ok::<_, Error>(5) })
        .without_timeout()
        .bulkhead(&bulkhead)
        .await;
    assert_eq!(out, Err(Error::Busy));
    assert_eq!(t0.elapsed(), Duration::from_millis(130), "waited max_wait");
}

#[tokio::test(start_paused = true)]
async fn guards_compose_in_any_order() {
    let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    let p = policy(2, false);
    let out = p
        .retry(|| async { Ok::<_, Error>(1) })
        .without_timeout()
        .bulkhead(&bulkhead)
        .throttle(&throttle)
        .await;
    assert_eq!(out, Ok(1));
    let out = p
        .retry(|| async { Ok::<_, Error>(2) })
        .without_timeout()
        .throttle(&throttle)
        .bulkhead(&bulkhead)
        .await;
    assert_eq!(out, Ok(2));
    assert_eq!(throttle.counts(), (2, 2));
    assert_eq!(bulkhead.in_flight(), 0);
}

/// Three retrying layers over a leaf failing a fraction of its calls (a fixed pseudo-random
/// sequence); the share of top-level calls that succeed, and the leaf attempts per call.
async fn chain_success(outer: &RetryPolicy, inner: &RetryPolicy, calls: u32) -> (f64, f64) {
    let state = Cell::new(0x9E37_79B9_7F4A_7C15u64);
    let leaf = Cell::new(0u32);
    let fails = || {
        // xorshift64: the same sequence for every configuration.
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x.is_multiple_of(10)
    };
    let mut ok = 0u32;
    for _ in 0..calls {
        let out: Result<(), Error> = outer
            .retry(|| async {
                inner
                    .retry(|| async {
                        inner
                            .retry(|| async {
                                leaf.set(leaf.get() + 1);
                                if fails() { Err(Error::Down) } else { Ok(()) }
                            })
                            .without_timeout()
                            .await
                    })
                    .without_timeout()
                    .await
            })
            .without_timeout()
            .await;
        ok += u32::from(out.is_ok());
    }
    (
        f64::from(ok) / f64::from(calls),
        f64::from(leaf.get()) / f64::from(calls),
    )
}

#[tokio::test(start_paused = true)]
async fn one_layer_keeps_the_success_rate_of_unlimited_retries_when_the_leaf_fails_10_percent() {
    let plain = policy(3, false);
    let one = policy(3, true);
    let (unlimited, per_call_unlimited) = chain_success(&plain, &plain, 20_000).await;
    let (layered, per_call_layered) = chain_success(&plain, &one, 20_000).await;
    println!(
        "leaf fails 10 %: success {:.4} % ({per_call_unlimited:.3} leaf attempts per call) unlimited, \
         {:.4} % ({per_call_layered:.3}) with one_layer",
        unlimited * 100.0,
        layered * 100.0
    );
    assert!((unlimited - layered).abs() * 100.0 <= 0.5);
}

/// A hedged policy: a copy starts alongside when none answered within 50 ms.
fn hedged(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(20 * MS)
        .jitter(Jitter::None)
        .idempotent(true)
        .hedge_after(retry_runtime::HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap()
}

/// An attempt that takes `took[attempt - 1]` ms and answers `Ok(attempt)`.
async fn answer(took: &[u64], attempt: u32) -> Result<u32, Error> {
    tokio::time::sleep(Duration::from_millis(took[attempt as usize - 1])).await;
    Ok(attempt)
}

#[tokio::test(start_paused = true)]
async fn each_copy_of_a_hedged_call_asks_the_throttle() {
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    // A dependency that accepted what it was sent: nothing is shed.
    for _ in 0..10 {
        throttle.try_acquire().unwrap();
        throttle.record(true);
    }
    let out = hedged(3)
        .retry(|| answer(&[1000, 10, 10], retry_runtime::context().unwrap().attempt()))
        .without_timeout()
        .throttle(&throttle)
        .await;
    assert_eq!(out, Ok(2), "the hedge answered first");
    // Two more requests, both accepted: the hedge answered, and the first copy, dropped before
    // it answered, was not refused by the dependency.
    assert_eq!(throttle.counts(), (12, 12));
}

#[tokio::test(start_paused = true)]
async fn a_throttle_refusing_the_first_attempt_ends_a_hedged_call_with_throttled() {
    retry_runtime::seed_rng(3);
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    for _ in 0..10_000 {
        let _ = throttle.try_acquire();
    }
    let calls = Cell::new(0);
    let out = hedged(3)
        .retry(|| {
            calls.set(calls.get() + 1);
            answer(&[10, 10, 10], retry_runtime::context().unwrap().attempt())
        })
        .without_timeout()
        .throttle(&throttle)
        .await;
    assert_eq!(out, Err(Error::Shed));
    assert_eq!(calls.get(), 0, "no attempt made");
}

#[tokio::test(start_paused = true)]
async fn a_hedge_the_throttle_refuses_is_the_last() {
    retry_runtime::seed_rng(3);
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    let started = std::cell::RefCell::new(vec![]);
    let out = hedged(3)
        .retry(|| {
            let n = retry_runtime::context().unwrap().attempt();
            started.borrow_mut().push(n);
            if n == 1 {
                // Meanwhile the dependency refuses everyone else's requests.
                for _ in 0..10_000 {
                    let _ = throttle.try_acquire();
                }
            }
            answer(&[1000, 10, 10], n)
        })
        .without_timeout()
        .throttle(&throttle)
        .await;
    assert_eq!(out, Ok(1), "the first copy answers; no hedge was sent");
    assert_eq!(*started.borrow(), [1]);
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_holds_one_bulkhead_slot_for_all_its_copies() {
    let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    let in_flight = std::cell::RefCell::new(vec![]);
    let out = hedged(3)
        .retry(|| {
            in_flight.borrow_mut().push(bulkhead.in_flight());
            answer(
                &[1000, 1000, 10],
                retry_runtime::context().unwrap().attempt(),
            )
        })
        .without_timeout()
        .bulkhead(&bulkhead)
        .await;
    assert_eq!(out, Ok(3), "three copies under one slot");
    assert_eq!(*in_flight.borrow(), [1, 1, 1]);
    assert_eq!(bulkhead.in_flight(), 0, "freed when the call ends");

    let _held = bulkhead.try_acquire().unwrap();
    let calls = Cell::new(0);
    let out = hedged(3)
        .retry(|| {
            calls.set(calls.get() + 1);
            answer(&[10, 10, 10], 1)
        })
        .without_timeout()
        .bulkhead(&bulkhead)
        .await;
    assert_eq!(out, Err(Error::Busy), "turned away, never retried");
    assert_eq!(calls.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_waits_for_a_slot_up_to_max_wait() {
    let bulkhead = Bulkhead::builder()
        .max_concurrent(1)
        .max_wait(30 * MS)
        .build()
        .unwrap();
    let held = bulkhead.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    let policy = hedged(3);
    let (out, ()) = tokio::join!(
        policy
            .retry(|| answer(&[10, 10, 10], 1))
            .without_timeout()
            .bulkhead(&bulkhead)
            .into_future(),
        async {
            tokio::time::sleep(20 * MS).await;
            drop(held);
        }
    );
    assert_eq!(out, Ok(1));
    assert_eq!(
        t0.elapsed(),
        30 * MS,
        "20 ms for the slot, 10 ms for the answer"
    );
}

/// Issue 25, finding 3: a nested call waiting for a bulkhead slot never outlives its caller.
/// The caller's `max_elapsed` is 300 ms; the inner call's bulkhead is full and would let it wait
/// 10 s. Its wait ends at the caller's deadline. A timed inner call (its attempt has no time
/// left) ends there as a spent deadline ends any call: its attempt is not made, and the call
/// returns the timeout's error (`DeadlineReached`); an untimed one, whose attempt would run
/// whatever the deadline, is turned away (`BulkheadFull`), never run without a slot.
async fn nested_wait(inner: &RetryPolicy, timed: bool) -> (Result<u32, Error>, Duration) {
    let bulkhead = Bulkhead::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(10))
        .build()
        .unwrap();
    let _held = bulkhead.try_acquire().unwrap();
    let outer = RetryPolicy::builder()
        .max_attempts(1)
        .max_elapsed(300 * MS)
        .build()
        .unwrap();
    let made = Cell::new(0);
    let t0 = tokio::time::Instant::now();
    let out = outer
        .retry(|| async {
            let call = inner
                .retry(|| async {
                    made.set(made.get() + 1);
                    Ok::<u32, Error>(1)
                })
                .bulkhead(&bulkhead);
            if timed {
                call.timeout_into(|_| Error::Down).await
            } else {
                call.without_timeout().await
            }
        })
        .without_timeout()
        .await;
    assert_eq!(made.get(), 0, "no attempt ran without a slot");
    (out, t0.elapsed())
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_waiting_for_a_slot_ends_at_its_callers_deadline() {
    let timed = RetryPolicy::builder()
        .max_attempts(3)
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let (out, took) = nested_wait(&timed, true).await;
    assert_eq!(took, 300 * MS, "waited past the caller's deadline");
    assert_eq!(
        out,
        Err(Error::Down),
        "the deadline (the timeout's error), not the bulkhead"
    );
    let untimed = policy(3, false);
    let (out, took) = nested_wait(&untimed, false).await;
    assert_eq!(took, 300 * MS, "waited past the caller's deadline");
    assert_eq!(out, Err(Error::Busy));
}

#[tokio::test(start_paused = true)]
async fn a_hedged_nested_call_waiting_for_a_slot_ends_at_its_callers_deadline() {
    let timed = RetryPolicy::builder()
        .max_attempts(3)
        .timeout(Duration::from_secs(1))
        .idempotent(true)
        .hedge_after(retry_runtime::HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap();
    let (out, took) = nested_wait(&timed, true).await;
    assert_eq!(took, 300 * MS, "waited past the caller's deadline");
    assert_eq!(out, Err(Error::Down));
}

/// The call's own `max_elapsed` bounds its wait for a slot too: the wait is part of the call.
#[tokio::test(start_paused = true)]
async fn a_calls_own_max_elapsed_bounds_its_wait_for_a_slot() {
    let bulkhead = Bulkhead::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(10))
        .build()
        .unwrap();
    let _held = bulkhead.try_acquire().unwrap();
    let p = RetryPolicy::builder()
        .timeout(Duration::from_secs(1))
        .max_elapsed(200 * MS)
        .build()
        .unwrap();
    let t0 = tokio::time::Instant::now();
    let out = p
        .retry(|| async { Ok::<u32, Error>(1) })
        .bulkhead(&bulkhead)
        .timeout_into(|_| Error::Down)
        .await;
    assert_eq!(t0.elapsed(), 200 * MS);
    assert_eq!(out, Err(Error::Down));
}
