//! `Send`-ness, extension traits in scope, and breaker/budget expressions evaluated once.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::{BreakerOpen, CircuitBreaker, RetryBudget, retryable};

use crate::{Fail, assert_send, first_try};

// S44: a by-value argument that is `Send` but not `Sync`.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn not_sync(counter: Cell<u32>) -> Result<u32, Fail> {
    counter.set(counter.get() + 1);
    tokio::task::yield_now().await;
    if first_try() {
        return Err(Fail);
    }
    Ok(counter.get())
}

// S45: an `Ok` type that is not `Send`, only returned.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn not_send_ok(n: u32) -> Result<Rc<u32>, Fail> {
    tokio::task::yield_now().await;
    if first_try() {
        return Err(Fail);
    }
    Ok(Rc::new(n))
}

#[derive(Debug)]
pub struct RcError(#[allow(dead_code)] Rc<str>);

// S46: an `Err` type that is not `Send`, only returned.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn not_send_err(n: u32) -> Result<u32, RcError> {
    if first_try() {
        return Err(RcError(Rc::from("first")));
    }
    Ok(n)
}

/// An extension trait whose methods have the names the runtime's do.
pub trait Hijack {
    fn decide(&mut self) -> u8 {
        0
    }
    fn attempt(&mut self) -> u8 {
        0
    }
    fn sleep(&self) -> u8 {
        0
    }
    fn recover(&mut self) -> u8 {
        0
    }
}

impl<T: ?Sized> Hijack for T {}

// S47: an extension trait in scope with the runtime's method names.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn with_extension_trait(n: u32) -> Result<u32, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(n)
}

#[derive(Debug, PartialEq)]
pub enum Guarded {
    Busy,
    Open,
}

impl From<BreakerOpen> for Guarded {
    fn from(_: BreakerOpen) -> Self {
        Guarded::Open
    }
}

static BREAKER_EVALS: AtomicU32 = AtomicU32::new(0);
static BUDGET_EVALS: AtomicU32 = AtomicU32::new(0);
static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().expect("valid"));
static BUDGET: LazyLock<RetryBudget> =
    LazyLock::new(|| RetryBudget::builder().build().expect("valid"));

fn breaker() -> &'static CircuitBreaker {
    BREAKER_EVALS.fetch_add(1, Ordering::SeqCst);
    &BREAKER
}

fn budget() -> &'static RetryBudget {
    BUDGET_EVALS.fetch_add(1, Ordering::SeqCst);
    &BUDGET
}

// S48: `circuit_breaker` and `budget` expressions with side effects: evaluated once per call.
#[retryable(max_attempts = 4, delay = "1ms", circuit_breaker = *breaker(), budget = *budget())]
async fn guarded_once() -> Result<u32, Guarded> {
    if crate::attempt() < 3 {
        return Err(Guarded::Busy);
    }
    Ok(crate::attempt())
}

#[tokio::test(start_paused = true)]
async fn send_and_scope() {
    assert_eq!(assert_send(not_sync(Cell::new(0))).await, Ok(1));
    assert_eq!(assert_send(not_send_ok(2)).await.map(|r| *r), Ok(2));
    assert_eq!(assert_send(not_send_err(3)).await.ok(), Some(3));
    assert_eq!(assert_send(with_extension_trait(4)).await, Ok(4));
    let mut unit = ();
    assert_eq!(
        unit.decide() + unit.attempt() + unit.sleep() + unit.recover(),
        0
    );
    assert_eq!(assert_send(guarded_once()).await, Ok(3));
    assert_eq!(BREAKER_EVALS.load(Ordering::SeqCst), 1);
    assert_eq!(BUDGET_EVALS.load(Ordering::SeqCst), 1);
}

#[test]
fn spawned_on_a_multi_thread_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let out = rt.block_on(async { tokio::spawn(not_sync(Cell::new(10))).await });
    assert_eq!(out.ok(), Some(Ok(11)));
}

// S69: `self` and `self: Box<Self>` by value, `Send` but not `Sync`: each attempt borrows the
// receiver mutably (`&mut T` is `Send` when `T` is), so the future stays `Send`.
pub struct NotSyncReceiver {
    c: Cell<u32>,
}

impl NotSyncReceiver {
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn run(self) -> Result<u32, Fail> {
        self.c.set(self.c.get() + 1);
        tokio::task::yield_now().await;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.c.get())
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn boxed(self: Box<Self>) -> Result<u32, Fail> {
        tokio::task::yield_now().await;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.c.get())
    }
}

#[tokio::test(start_paused = true)]
async fn by_value_receivers_keep_send() {
    let c = NotSyncReceiver { c: Cell::new(0) };
    // The receiver is not cloned: the second attempt sees the first one's increment.
    assert_eq!(assert_send(c.run()).await, Ok(2));
    let c = Box::new(NotSyncReceiver { c: Cell::new(5) });
    assert_eq!(assert_send(c.boxed()).await, Ok(5));
    let rt_out = tokio::spawn(NotSyncReceiver { c: Cell::new(1) }.run()).await;
    assert_eq!(rt_out.ok(), Some(Ok(3)));
}
