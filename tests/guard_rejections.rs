//! A guard's rejection decided where it is found (`Call::decide_rejected`) and a
//! `Retry` forgetting the last attempt's flags, through the shapes users write.

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::{Bulkhead, CircuitBreaker, RetryBudget, RetryPolicy, retryable};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
enum E {
    Unavailable,
    Open,
    Full,
    Timeout,
}

impl From<reattempt::BreakerOpen> for E {
    fn from(_: reattempt::BreakerOpen) -> Self {
        E::Open
    }
}
impl From<reattempt::BulkheadFull> for E {
    fn from(_: reattempt::BulkheadFull) -> Self {
        E::Full
    }
}
impl From<reattempt::Elapsed> for E {
    fn from(_: reattempt::Elapsed) -> Self {
        E::Timeout
    }
}

fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn budget() -> RetryBudget {
    RetryBudget::builder()
        .max_tokens(100)
        .initial_tokens(100)
        .retry_cost(5)
        .timeout_cost(10)
        .build()
        .unwrap()
}

struct Svc {
    breaker: CircuitBreaker,
    budget: RetryBudget,
    calls: AtomicU32,
    bulkhead: Bulkhead,
}

impl Svc {
    fn new() -> Self {
        Svc {
            breaker: breaker(),
            budget: budget(),
            calls: AtomicU32::new(0),
            bulkhead: Bulkhead::builder().max_concurrent(1).build().unwrap(),
        }
    }

    #[retryable(max_attempts = 3, delay = "10ms", jitter = "none", timeout = "50ms",
                idempotent = true, circuit_breaker = self.breaker, budget = self.budget)]
    async fn timed(&self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        std::future::pending::<()>().await;
        Ok(1)
    }

    #[retryable(max_attempts = 3, delay = "10ms", jitter = "none",
                circuit_breaker = self.breaker, budget = self.budget)]
    async fn untimed(&self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }

    #[retryable(max_attempts = 3, delay = "1ms", jitter = "none",
                circuit_breaker = self.breaker, budget = self.budget)]
    fn blocking(&self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }

    #[retryable(max_attempts = 3, delay = "1ms", jitter = "none",
                circuit_breaker = self.breaker, budget = self.budget)]
    fn blocking_mut(&mut self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }

    #[retryable(max_attempts = 3, delay = "10ms", jitter = "none",
                circuit_breaker = self.breaker, budget = self.budget)]
    async fn async_mut(&mut self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }

    #[retryable(max_attempts = 3, delay = "1ms", bulkhead = self.bulkhead)]
    fn bulkhead_only(&self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }

    #[retryable(policy = self.policy(), circuit_breaker = self.breaker, budget = self.budget)]
    async fn long_polled(&self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }

    // A method, as users write `policy = self.policy()` (the shape under test).
    #[allow(clippy::unused_self)]
    fn policy(&self) -> &'static RetryPolicy {
        static P: std::sync::LazyLock<RetryPolicy> = std::sync::LazyLock::new(|| {
            RetryPolicy::builder()
                .max_attempts(3)
                .delay(Duration::from_millis(100))
                .jitter(reattempt::Jitter::None)
                .long_polling(true)
                .build()
                .unwrap()
        });
        &P
    }
}

/// A rejected retry after a timeout: the last error kept, the timeout's cost refunded.
#[tokio::test(start_paused = true)]
async fn a_rejected_retry_after_a_timeout_refunds_the_timeout_cost() {
    let s = Svc::new();
    let t0 = Instant::now();
    assert_eq!(s.timed().await, Err(E::Timeout));
    assert_eq!(s.calls.load(SeqCst), 1);
    assert_eq!(t0.elapsed(), Duration::from_millis(60));
    assert_eq!(s.budget.available(), 100, "the retry's 10 refunded");
    // The breaker is open: the next call is rejected where it is found, nothing made.
    assert_eq!(s.timed().await, Err(E::Open));
    assert_eq!(s.calls.load(SeqCst), 1);
    assert_eq!(s.budget.available(), 100);
}

#[tokio::test(start_paused = true)]
async fn a_rejected_retry_untimed_async() {
    let s = Svc::new();
    let t0 = Instant::now();
    assert_eq!(s.untimed().await, Err(E::Unavailable));
    assert_eq!(
        (s.calls.load(SeqCst), t0.elapsed()),
        (1, Duration::from_millis(10))
    );
    assert_eq!(s.budget.available(), 100, "the retry's 5 refunded");
    assert_eq!(s.untimed().await, Err(E::Open));
    assert_eq!(s.calls.load(SeqCst), 1);
}

#[test]
fn a_rejected_retry_blocking() {
    let mut s = Svc::new();
    assert_eq!(s.blocking(), Err(E::Unavailable));
    assert_eq!(s.calls.load(SeqCst), 1);
    assert_eq!(s.budget.available(), 100);
    assert_eq!(s.blocking(), Err(E::Open));
    assert_eq!(s.blocking_mut(), Err(E::Open));
    assert_eq!(s.calls.load(SeqCst), 1);
    assert_eq!(s.budget.available(), 100);
}

#[tokio::test(start_paused = true)]
async fn a_rejected_retry_async_mut() {
    let mut s = Svc::new();
    assert_eq!(s.async_mut().await, Err(E::Unavailable));
    assert_eq!(s.async_mut().await, Err(E::Open));
    assert_eq!(s.calls.load(SeqCst), 1);
    assert_eq!(s.budget.available(), 100);
}

#[test]
fn a_full_bulkhead_turns_a_blocking_call_away() {
    let s = Svc::new();
    let held = s.bulkhead.try_acquire().unwrap();
    assert_eq!(s.bulkhead_only(), Err(E::Full));
    assert_eq!(s.calls.load(SeqCst), 0);
    drop(held);
    assert_eq!(s.bulkhead_only(), Err(E::Unavailable));
    assert_eq!(s.calls.load(SeqCst), 3);
    assert_eq!(s.bulkhead.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn long_polling_with_a_rejected_retry_does_not_linger() {
    let s = Svc::new();
    let t0 = Instant::now();
    assert_eq!(s.long_polled().await, Err(E::Unavailable));
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(100),
        "the one delay, no linger"
    );
    assert_eq!(s.calls.load(SeqCst), 1);
    assert_eq!(s.budget.available(), 100);
    let t0 = Instant::now();
    assert_eq!(s.long_polled().await, Err(E::Open));
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

/// The same through the closure API.
#[tokio::test(start_paused = true)]
async fn the_closure_api_agrees() {
    let (b, budget) = (breaker(), budget());
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .jitter(reattempt::Jitter::None)
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let calls = AtomicU32::new(0);
    let t0 = Instant::now();
    let out: Result<u32, E> = policy
        .retry(|| {
            calls.fetch_add(1, SeqCst);
            async { std::future::pending::<Result<u32, E>>().await }
        })
        .idempotent(true)
        .circuit_breaker(&b)
        .budget(&budget)
        .await;
    assert_eq!(out, Err(E::Timeout));
    assert_eq!(
        (calls.load(SeqCst), t0.elapsed()),
        (1, Duration::from_millis(60))
    );
    assert_eq!(budget.available(), 100);
}

#[retryable(
    max_attempts = 2,
    delay = "10ms",
    jitter = "none",
    timeout = "50ms",
    idempotent = true
)]
async fn timed_plain(calls: &AtomicU32) -> Result<u32, E> {
    calls.fetch_add(1, SeqCst);
    std::future::pending::<()>().await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_idempotent_attempt_is_retried_after_its_delay() {
    let calls = AtomicU32::new(0);
    let t0 = Instant::now();
    assert_eq!(timed_plain(&calls).await, Err(E::Timeout));
    assert_eq!(
        (calls.load(SeqCst), t0.elapsed()),
        (2, Duration::from_millis(110))
    );
}

#[async_trait::async_trait]
trait Fetch {
    async fn fetch(&self) -> Result<u32, E>;
}

struct Traited {
    breaker: CircuitBreaker,
    calls: AtomicU32,
    recovered: AtomicU32,
}

#[async_trait::async_trait]
impl Fetch for Traited {
    #[retryable(max_attempts = 3, delay = "10ms", jitter = "none",
                circuit_breaker = self.breaker, recover = Self::fallback)]
    async fn fetch(&self) -> Result<u32, E> {
        self.calls.fetch_add(1, SeqCst);
        Err(E::Unavailable)
    }
}

impl Traited {
    #[reattempt::recover]
    async fn fallback(&self, e: E) -> Result<u32, E> {
        self.recovered.fetch_add(1, SeqCst);
        Err(e)
    }
}

/// `#[async_trait]` with a breaker and `recover`: a rejected retry ends with the kept error, a
/// rejected first attempt with the rejection, and the fallback runs after each.
#[tokio::test(start_paused = true)]
async fn async_trait_with_a_breaker_and_recover() {
    let t = Traited {
        breaker: breaker(),
        calls: AtomicU32::new(0),
        recovered: AtomicU32::new(0),
    };
    assert_eq!(t.fetch().await, Err(E::Unavailable));
    assert_eq!(t.fetch().await, Err(E::Open));
    assert_eq!((t.calls.load(SeqCst), t.recovered.load(SeqCst)), (1, 2));
}
