//! Hostile review (issues 15/17): a hedged call through the closure driver and the guards of
//! issue 17 (bulkhead, throttle), and a hedge's start against `max_elapsed`.

use std::cell::Cell;
use std::io;
use std::time::Duration;

use retry_runtime::{AdaptiveThrottle, Bulkhead, HedgeAfter, RetryPolicy};

const MS: Duration = Duration::from_millis(1);

fn hedged() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap()
}

/// The bulkhead's only slot is taken: the call must be turned away, as without hedging.
#[tokio::test(start_paused = true)]
async fn a_hedged_call_is_turned_away_by_a_full_bulkhead() {
    let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    let _held = bulkhead.try_acquire().unwrap();
    // Without hedging: turned away.
    let plain = RetryPolicy::builder().max_attempts(3).build().unwrap();
    let out: io::Result<u32> = plain.retry(|| async { Ok(7) }).bulkhead(&bulkhead).await;
    assert_eq!(out.unwrap_err().to_string(), "bulkhead full");
    // With hedging: the same.
    let calls = Cell::new(0);
    let out: io::Result<u32> = hedged()
        .retry(|| {
            calls.set(calls.get() + 1);
            async { Ok(7) }
        })
        .bulkhead(&bulkhead)
        .await;
    assert_eq!(calls.get(), 0, "no attempt is made past a full bulkhead");
    assert_eq!(out.unwrap_err().to_string(), "bulkhead full");
}

/// A hedged call holds a slot while it runs.
#[tokio::test(start_paused = true)]
async fn a_hedged_call_holds_a_bulkhead_slot() {
    let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    let policy = hedged();
    let seen = Cell::new(u32::MAX);
    let out: io::Result<u32> = policy
        .retry(|| {
            seen.set(bulkhead.in_flight());
            async { Ok(7) }
        })
        .bulkhead(&bulkhead)
        .await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(seen.get(), 1, "the call held the slot during its attempt");
    assert_eq!(bulkhead.in_flight(), 0);
}

/// The throttle counts the hedged call's attempts and their answers, as a plain call's.
#[tokio::test(start_paused = true)]
async fn a_hedged_call_goes_through_the_throttle() {
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    let plain = RetryPolicy::builder().max_attempts(3).build().unwrap();
    let out: io::Result<u32> = plain.retry(|| async { Ok(7) }).throttle(&throttle).await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(throttle.counts(), (1, 1));
    let out: io::Result<u32> = hedged().retry(|| async { Ok(7) }).throttle(&throttle).await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(
        throttle.counts(),
        (2, 2),
        "the hedged call's attempt counted"
    );
}

/// A hedge is an attempt like a retry: none starts at or past the call's `max_elapsed`
/// (a retry's sleep never ends past it), even without a per-attempt timeout.
#[tokio::test(start_paused = true)]
async fn no_hedge_starts_past_max_elapsed() {
    let policy = RetryPolicy::builder()
        .max_attempts(10)
        .max_elapsed(100 * MS)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(40 * MS))
        .build()
        .unwrap();
    let t0 = tokio::time::Instant::now();
    let starts = std::cell::RefCell::new(Vec::new());
    let out: Result<u32, String> = policy
        .retry(|| {
            starts.borrow_mut().push(t0.elapsed());
            let n = starts.borrow().len();
            async move {
                // Every copy takes 500 ms: hedges at 40, 80 ms, and none at or past 100 ms.
                tokio::time::sleep(500 * MS).await;
                Ok(u32::try_from(n).unwrap())
            }
        })
        .without_timeout()
        .await;
    assert!(out.is_ok());
    let starts = starts.into_inner();
    assert!(
        starts.iter().all(|s| *s < 100 * MS),
        "attempts started at {starts:?}, past max_elapsed (100 ms)"
    );
}

/// `one_layer` holds for a hedged call nested in a retrying call: it makes one attempt, and no
/// hedge starts beside it (a hedge is an attempt; the outer call retries), as without hedging.
/// (Hedges would start at 10 and 20 ms; a retry of a hedge's failure at 11 ms.)
#[tokio::test(start_paused = true)]
async fn one_layer_holds_for_a_nested_hedged_call_with_copies_in_flight() {
    let outer = RetryPolicy::builder()
        .max_attempts(3)
        .delay(MS)
        .jitter(retry_runtime::Jitter::None)
        .build()
        .unwrap();
    let inner = RetryPolicy::builder()
        .max_attempts(3)
        .delay(MS)
        .jitter(retry_runtime::Jitter::None)
        .one_layer(true)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(10 * MS))
        .build()
        .unwrap();
    let t0 = tokio::time::Instant::now();
    let starts = std::cell::RefCell::new(Vec::new());
    let out: io::Result<u32> = outer
        .retry(|| {
            let inner = &inner;
            let starts = &starts;
            async move {
                inner
                    .retry(|| {
                        starts.borrow_mut().push(t0.elapsed());
                        let n = starts.borrow().len();
                        async move {
                            if n == 1 {
                                // The first copy is slow, then answers.
                                tokio::time::sleep(100 * MS).await;
                                Ok(1)
                            } else {
                                // The others fail at once with a retryable error.
                                Err(io::ErrorKind::ConnectionReset.into())
                            }
                        }
                    })
                    .await
            }
        })
        .await;
    assert_eq!(out.unwrap(), 1);
    assert_eq!(
        starts.into_inner(),
        [Duration::ZERO],
        "one_layer: one attempt, no hedge and no retry while the outer call has attempts left"
    );
}

/// The throttle's buckets are compared by wrapping difference: a slot last written more than
/// 2^31 buckets ago (24.9 days of a 20 ms window's 1 ms buckets) must still be started afresh,
/// not mistaken for a newer bucket and left unwritten.
#[tokio::test(start_paused = true)]
async fn the_throttle_counts_after_a_long_idle_spell() {
    let t = AdaptiveThrottle::builder().window(20 * MS).build().unwrap();
    t.try_acquire().unwrap();
    t.record(true);
    assert_eq!(t.counts(), (1, 1));
    tokio::time::advance(MS * (1 << 31) + 20 * MS).await;
    let _ = t.try_acquire();
    t.record(true);
    assert_eq!(
        t.counts(),
        (1, 1),
        "the request and accept made now are counted"
    );
}

/// A call that retried and then hedged, and succeeded: the retry's cost comes back (as in a call
/// that only retried), the hedge's does not. (Paying the hedge must not forget the retry's.)
#[tokio::test(start_paused = true)]
async fn a_hedge_does_not_cancel_the_refund_of_the_retry_before_it() {
    let budget = retry_runtime::RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(10)
        .build()
        .unwrap();
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(MS)
        .jitter(retry_runtime::Jitter::None)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap();
    let n = Cell::new(0u32);
    let out: io::Result<u32> = policy
        .retry(|| {
            n.set(n.get() + 1);
            let n = n.get();
            async move {
                match n {
                    1 => Err(io::ErrorKind::ConnectionReset.into()),
                    2 => {
                        tokio::time::sleep(100 * MS).await;
                        Ok(2)
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        Ok(n)
                    }
                }
            }
        })
        .budget(&budget)
        .await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(n.get(), 3, "a retry, then a hedge");
    assert_eq!(budget.available(), 90, "the retry refunded, the hedge paid");
}
