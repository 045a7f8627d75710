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

/// A boxed error that is not `Send` (the most common ad-hoc error type), only returned.
type BoxError = Box<dyn std::error::Error>;

static POLICY: LazyLock<reattempt::RetryPolicy> =
    LazyLock::new(|| reattempt::RetryPolicy::builder().build().expect("valid"));

async fn busy() -> Result<u8, BoxError> {
    Err("busy".into())
}

/// A budget given only when one is configured: `budget` keeps the call's type.
async fn with_optional_budget(budget: Option<&RetryBudget>) -> Result<u8, std::io::Error> {
    let call = POLICY.retry(|| async { Ok::<u8, std::io::Error>(1) });
    let call = if let Some(b) = budget {
        call.budget(b)
    } else {
        call
    };
    call.await
}

// S78: the closure API with a budget and an `Err` type that is not `Send`: the future is
// `Send` (a spawned task whose output drops the error), and `budget` keeps the call's type.
#[tokio::test]
async fn closure_call_with_a_budget_and_a_non_send_error_is_send() {
    let task = tokio::spawn(async {
        POLICY
            .retry(busy)
            .retry_if(|_: &BoxError| false)
            .budget(&BUDGET)
            .await
            .is_ok()
    });
    assert!(!task.await.expect("joined"));
    assert_eq!(with_optional_budget(Some(&BUDGET)).await.ok(), Some(1));
    assert_eq!(with_optional_budget(None).await.ok(), Some(1));
}

// S79: `#[async_trait]` (which needs a `Send` future) with a `budget`, an `Err` type that is not
// `Send`, and no run-time `policy`: the attribute's loop, and a literal `hedge_after` (the
// closure driver). Neither can long-poll, so neither keeps the outcome.
#[async_trait::async_trait]
trait BoxedFetch {
    async fn budget_only(&self) -> Result<u8, BoxError>;
    async fn hedged_budget(&self) -> Result<u8, BoxError>;
    async fn policy_and_budget(&self, key: String) -> Result<u8, SendError>;
}

struct BoxedClient;

/// A boxed error that is `Send` (a run-time policy may time attempts out: it converts
/// `Elapsed`).
type SendError = Box<dyn std::error::Error + Send + Sync>;

#[async_trait::async_trait]
impl BoxedFetch for BoxedClient {
    #[retryable(budget = *BUDGET, retry_if = |_| false)]
    async fn budget_only(&self) -> Result<u8, BoxError> {
        Err("busy".into())
    }

    #[retryable(hedge_after = "50ms", idempotent = true, budget = *BUDGET, retry_if = |_| false)]
    async fn hedged_budget(&self) -> Result<u8, BoxError> {
        Err("busy".into())
    }

    // S80: a run-time `policy` and a `budget` (the call may long-poll, and then keeps its
    // outcome during the wait): `Send` with a `Send` error.
    #[retryable(policy = *POLICY, budget = *BUDGET)]
    async fn policy_and_budget(&self, key: String) -> Result<u8, SendError> {
        if first_try() {
            return Err("first".into());
        }
        Ok(u8::try_from(key.len()).unwrap_or(0))
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_with_a_budget_is_send() {
    assert!(assert_send(BoxedClient.budget_only()).await.is_err());
    assert!(assert_send(BoxedClient.hedged_budget()).await.is_err());
    assert_eq!(
        assert_send(BoxedClient.policy_and_budget("ab".into()))
            .await
            .ok(),
        Some(2)
    );
}

/// A value's type, for [`is_send!`]: a method found through autoref says whether it is `Send`
/// (`Yes`, taken by value, applies only then; `No`, found by autoref, otherwise).
struct Probe<T>(std::marker::PhantomData<T>);

trait Yes {
    fn is_send(&self) -> bool {
        true
    }
}

impl<T: Send> Yes for Probe<T> {}

trait No {
    fn is_send(&self) -> bool {
        false
    }
}

impl<T> No for &Probe<T> {}

fn probe<T>(_: &T) -> Probe<T> {
    Probe(std::marker::PhantomData)
}

/// Whether the future (or value) `$e` is `Send`, asked where its type is concrete.
macro_rules! is_send {
    ($e:expr) => {{
        let value = $e;
        let sent = (&probe(&value)).is_send();
        drop(value);
        sent
    }};
}

// S80's documented exception: with a run-time `policy` and a `budget`, the outcome is kept
// during a long-polling wait, so the future is `Send` only if `T` and `E` are (the `budget`
// row of the attribute's key table); without `policy` it is `Send` whatever they are.
#[retryable(policy = *POLICY, budget = *BUDGET, retry_if = |_| false)]
async fn may_long_poll() -> Result<u8, BoxError> {
    Err("busy".into())
}

#[retryable(budget = *BUDGET, retry_if = |_| false)]
async fn never_long_polls() -> Result<u8, BoxError> {
    Err("busy".into())
}

#[test]
fn a_policy_and_a_budget_need_a_send_error_for_a_send_future() {
    assert!(!is_send!(may_long_poll()));
    assert!(is_send!(never_long_polls()));
    assert!(is_send!(BoxedClient.policy_and_budget(String::new())));
}
