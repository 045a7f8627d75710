//! A budget keeps nothing across an ordinary backoff sleep: a retried value (a 503 response and
//! its connection) is dropped when the call decides to retry, with or without a budget, and
//! with the long-polling opt-in too (it keeps the outcome only for the long-polling wait).

use std::cell::{Cell, RefCell};
use std::time::Duration;

use reattempt::{Jitter, RetryBudget, RetryPolicy};
use tokio::time::Instant;

#[derive(Debug)]
struct E;

// A retried `Ok` value (an HTTP response the caller retries with `retry_if_ok`: a 503 whose
// connection and body it holds) is dropped when the call decides to retry, not held across the
// backoff sleep. With only a budget (no breaker, no throttle, long polling off) nothing needs
// it after the decision.
thread_local! {
    static DROPPED: RefCell<Vec<(u32, Duration)>> = const { RefCell::new(Vec::new()) };
}

#[derive(Debug)]
struct Held(u32, Instant);

impl Drop for Held {
    fn drop(&mut self) {
        let (n, t0) = (self.0, self.1);
        DROPPED.with(|d| d.borrow_mut().push((n, t0.elapsed())));
    }
}

async fn drops_of_a_retried_ok(budget_kind: u8) -> Vec<(u32, Duration)> {
    DROPPED.with(|d| d.borrow_mut().clear());
    let policy = RetryPolicy::builder()
        .delay(Duration::from_secs(5))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let budget = RetryBudget::builder().build().unwrap();
    let t0 = Instant::now();
    let n = Cell::new(0);
    let call = policy
        .retry(|| {
            n.set(n.get() + 1);
            let v = Held(n.get(), t0);
            async move { Ok::<_, E>(v) }
        })
        .without_timeout()
        .retry_if_ok(|v: &Held| v.0 == 1);
    let out = match budget_kind {
        0 => call.await,
        1 => call.budget(&budget).await,
        _ => call.budget(&budget).long_polling_wait().await,
    };
    assert_eq!(out.as_ref().unwrap().0, 2);
    drop(out);
    DROPPED.with(|d| d.borrow().clone())
}

#[tokio::test(start_paused = true)]
async fn a_budget_drops_each_retried_ok_at_the_decision() {
    let without = drops_of_a_retried_ok(0).await;
    assert_eq!(
        without[0],
        (1, Duration::ZERO),
        "without a budget: dropped at the decision"
    );
    let with = drops_of_a_retried_ok(1).await;
    assert_eq!(
        with[0],
        (1, Duration::ZERO),
        "with a budget: not held through the 5 s backoff"
    );
    let waiting = drops_of_a_retried_ok(2).await;
    assert_eq!(
        waiting[0],
        (1, Duration::ZERO),
        "with long_polling_wait: not held either"
    );
}
