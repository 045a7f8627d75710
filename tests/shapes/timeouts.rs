//! Errors that say they timed out (`Transient::is_timeout`), under a budget or a breaker: asked
//! when the error type is `Transient` (concrete, or a generic bounded by it), not otherwise.

use std::fmt::Debug;
use std::io::{self, ErrorKind};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::{BreakerOpen, CircuitBreaker, RetryBudget, Transient, retryable};

use crate::{assert_send, first_try};

/// A budget of 100 whose timeouts cost 10 and other retries 5.
fn budget() -> RetryBudget {
    RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(5)
        .timeout_cost(10)
        .success_deposit(0)
        .build()
        .expect("valid")
}

/// Fails the first attempt with a timeout; the second records what the budget held.
fn timed_out_once(budget: &RetryBudget, seen: &AtomicU32) -> io::Result<u32> {
    if first_try() {
        return Err(ErrorKind::TimedOut.into());
    }
    seen.store(budget.available(), Ordering::SeqCst);
    Ok(1)
}

static CONCRETE: LazyLock<RetryBudget> = LazyLock::new(budget);
static CONCRETE_SEEN: AtomicU32 = AtomicU32::new(0);

// S64: a concrete `Transient` error under a budget: a timeout it reports costs `timeout_cost`.
#[retryable(max_attempts = 2, delay = "1ms", budget = CONCRETE)]
async fn concrete() -> io::Result<u32> {
    timed_out_once(&CONCRETE, &CONCRETE_SEEN)
}

static BLOCKING: LazyLock<RetryBudget> = LazyLock::new(budget);
static BLOCKING_SEEN: AtomicU32 = AtomicU32::new(0);

// S65: the same, blocking.
#[retryable(max_attempts = 2, delay = "1ms", budget = BLOCKING)]
fn blocking() -> io::Result<u32> {
    timed_out_once(&BLOCKING, &BLOCKING_SEEN)
}

static BOUNDED: LazyLock<RetryBudget> = LazyLock::new(budget);
static BOUNDED_SEEN: AtomicU32 = AtomicU32::new(0);

// S66: a generic error bounded by `Transient`: asked.
#[retryable(max_attempts = 2, delay = "1ms", budget = BOUNDED)]
async fn bounded<E>() -> Result<u32, E>
where
    E: Transient + From<io::Error> + Debug + Send,
{
    Ok(timed_out_once(&BOUNDED, &BOUNDED_SEEN)?)
}

static UNBOUNDED: LazyLock<RetryBudget> = LazyLock::new(budget);
static UNBOUNDED_SEEN: AtomicU32 = AtomicU32::new(0);

// S67: a generic error not bounded by `Transient`: not asked, even when it is `io::Error`.
#[retryable(max_attempts = 2, delay = "1ms", budget = UNBOUNDED)]
async fn unbounded<E: From<io::Error> + Debug + Send>() -> Result<u32, E> {
    Ok(timed_out_once(&UNBOUNDED, &UNBOUNDED_SEEN)?)
}

#[derive(Debug)]
enum Guarded {
    Io(io::Error),
    Open,
}

impl From<BreakerOpen> for Guarded {
    fn from(_: BreakerOpen) -> Self {
        Guarded::Open
    }
}

impl Transient for Guarded {
    fn is_transient(&self) -> bool {
        false
    }
    fn is_timeout(&self) -> bool {
        matches!(self, Guarded::Io(e) if e.kind() == ErrorKind::TimedOut)
    }
}

struct Client {
    breaker: CircuitBreaker,
}

impl Client {
    // S68: a `&mut self` method whose breaker is a field (evaluated at each use): a timeout that
    // is not retried still counts as a failure.
    #[retryable(max_attempts = 2, delay = "1ms", circuit_breaker = self.breaker,
                retry_if = reattempt::transient)]
    async fn call(&mut self) -> Result<u32, Guarded> {
        Err(Guarded::Io(ErrorKind::TimedOut.into()))
    }
}

#[tokio::test(start_paused = true)]
async fn timeouts_reported_by_the_error() {
    assert_eq!(assert_send(concrete()).await.ok(), Some(1));
    assert_eq!(CONCRETE_SEEN.load(Ordering::SeqCst), 90);
    assert_eq!(CONCRETE.available(), 100);
    assert_eq!(
        tokio::task::spawn_blocking(blocking)
            .await
            .ok()
            .and_then(Result::ok),
        Some(1)
    );
    assert_eq!(BLOCKING_SEEN.load(Ordering::SeqCst), 90);
    assert_eq!(assert_send(bounded::<io::Error>()).await.ok(), Some(1));
    assert_eq!(BOUNDED_SEEN.load(Ordering::SeqCst), 90);
    assert_eq!(assert_send(unbounded::<io::Error>()).await.ok(), Some(1));
    assert_eq!(UNBOUNDED_SEEN.load(Ordering::SeqCst), 95);

    let mut client = Client {
        breaker: CircuitBreaker::builder()
            .failure_threshold(1)
            .build()
            .expect("valid"),
    };
    assert!(matches!(client.call().await, Err(Guarded::Io(_))));
    assert_eq!(client.breaker.state(), reattempt::BreakerState::Open);
    assert!(matches!(client.call().await, Err(Guarded::Open)));
}
