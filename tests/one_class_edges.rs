//! One class vocabulary (issue 37), at its edges: a class belongs to the type it was noted for.
//! A wrapper whose `is_transient` asks the crate about the `StatusCode` it holds, or a predicate
//! that asks about an error's inner cause, notes the inner class (a 429's throttling); it is not
//! the outer error's, in any driver: the attribute (whatever its keys) and the closure API give
//! the outer type's own class. Also: the breaker counts a failure alike in every driver, and a
//! retrying call nested in a predicate leaks no class.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use http::StatusCode;
use reattempt::testing::trace;
use reattempt::{ErrorClass, Jitter, Preset, RetryBudget, RetryPolicy, Transient, retryable};

fn policy() -> RetryPolicy {
    Preset::Aws2026
        .policy()
        .jitter(Jitter::None)
        .max_attempts(2)
        .build()
        .unwrap()
}
static POLICY: LazyLock<RetryPolicy> = LazyLock::new(policy);
fn budget() -> RetryBudget {
    Preset::Aws2026.budget().build().unwrap()
}

#[derive(Debug, PartialEq, Eq)]
struct Run {
    delays: Vec<Duration>,
    classes: Vec<String>,
    tokens: u32,
}
fn run(trace: &reattempt::testing::Trace, budget: &RetryBudget) -> Run {
    Run {
        delays: trace.delays(),
        classes: trace.retries().into_iter().map(|r| r.class).collect(),
        tokens: budget.available(),
    }
}

// ---------------------------------------------------------------------------------------------
// A user's error type implementing `Transient`, whose `is_transient` delegates to the crate's
// impl for `http::StatusCode`, and whose own `class` is stated (the user's word: transient).
#[derive(Debug)]
struct ApiError(StatusCode);
impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError(StatusCode::GATEWAY_TIMEOUT)
    }
}
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}
impl std::error::Error for ApiError {}
impl Transient for ApiError {
    fn is_transient(&self) -> bool {
        self.0.is_transient()
    }
    fn class(&self) -> ErrorClass {
        // The user's own word: every failure of this API is a plain transient one.
        ErrorClass::Transient
    }
}

struct Api {
    calls: AtomicU32,
    budget: RetryBudget,
}
impl Api {
    #[retryable(policy = &POLICY, budget = self.budget, retry_if = |e: &ApiError| e.is_transient())]
    async fn call(&self) -> Result<u32, ApiError> {
        self.calls.fetch_add(1, SeqCst);
        Err(ApiError(StatusCode::TOO_MANY_REQUESTS))
    }
}

/// The same error type, the same policy and budget: the attribute and the closure API (with
/// `|e| e.is_transient()` or with `transient`) give the same class (delay, cost, event): the
/// user's own `ApiError::class`, transient, not the throttling the inner `StatusCode` noted
/// while `is_transient` ran.
#[tokio::test(start_paused = true)]
async fn a_wrappers_stated_class_wins_over_the_class_its_inner_status_noted() {
    let api = Api {
        calls: AtomicU32::new(0),
        budget: budget(),
    };
    let (_, t) = trace(api.call()).await;
    let attribute = run(&t, &api.budget);

    let budget = budget();
    let policy = policy();
    let call = policy
        .retry(|| async { Err::<u32, _>(ApiError(StatusCode::TOO_MANY_REQUESTS)) })
        .retry_if(|e: &ApiError| e.is_transient())
        .without_timeout()
        .budget(&budget);
    let (_, t) = trace(call).await;
    let closure = run(&t, &budget);

    let budget2 = reattempt::Preset::Aws2026.budget().build().unwrap();
    let call = policy
        .retry(|| async { Err::<u32, _>(ApiError(StatusCode::TOO_MANY_REQUESTS)) })
        .retry_if(reattempt::transient)
        .without_timeout()
        .budget(&budget2);
    let (_, t) = trace(call).await;
    let closure_transient = run(&t, &budget2);

    assert_eq!(
        (&attribute, &closure_transient),
        (&closure, &closure),
        "attribute: {attribute:?}\nclosure .retry_if(|e| e.is_transient()): {closure:?}\nclosure .retry_if(transient): {closure_transient:?}"
    );
    assert_eq!(
        (closure.delays, closure.classes),
        (
            vec![Duration::from_millis(50)],
            vec!["transient".to_owned()]
        ),
        "ApiError says transient"
    );
}

// ---------------------------------------------------------------------------------------------
// A wrapper that implements `Transient` with the default class, and a predicate that asks the
// crate about the inner cause (the brief's case): attribute vs closure.
#[derive(Debug)]
struct Wrapped(StatusCode);
impl From<reattempt::Elapsed> for Wrapped {
    fn from(_: reattempt::Elapsed) -> Self {
        Wrapped(StatusCode::GATEWAY_TIMEOUT)
    }
}
impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}
impl std::error::Error for Wrapped {}
impl Transient for Wrapped {
    fn is_transient(&self) -> bool {
        true
    }
}
struct Api2 {
    budget: RetryBudget,
}
impl Api2 {
    #[retryable(policy = &POLICY, budget = self.budget, retry_if = |e: &Wrapped| reattempt::transient(&e.0))]
    async fn call(&self) -> Result<u32, Wrapped> {
        Err(Wrapped(StatusCode::TOO_MANY_REQUESTS))
    }
    #[retryable(max_attempts = 2, delay = "50ms", jitter = "none", retry_if = |e: &Wrapped| reattempt::transient(&e.0))]
    async fn call_without_guards(&self) -> Result<u32, Wrapped> {
        Err(Wrapped(StatusCode::TOO_MANY_REQUESTS))
    }
}

/// `transient(&e.0)` notes the inner 429's class; `Wrapped` states its own (the default,
/// transient): that one, in the attribute with a policy and a budget, in the attribute with no
/// guard (its events), and in the closure API.
#[tokio::test(start_paused = true)]
async fn a_predicate_on_an_inner_cause_gives_the_outer_types_class_in_every_driver() {
    let api = Api2 { budget: budget() };
    let (_, t) = trace(api.call()).await;
    let attribute = run(&t, &api.budget);
    let (_, t) = trace(api.call_without_guards()).await;
    let attribute_plain: Vec<String> = t.retries().into_iter().map(|r| r.class).collect();

    let budget = budget();
    let policy = policy();
    let call = policy
        .retry(|| async { Err::<u32, _>(Wrapped(StatusCode::TOO_MANY_REQUESTS)) })
        .retry_if(|e: &Wrapped| reattempt::transient(&e.0))
        .without_timeout()
        .budget(&budget);
    let (_, t) = trace(call).await;
    let closure = run(&t, &budget);
    assert_eq!(
        (&attribute, &attribute_plain),
        (&closure, &closure.classes),
        "attribute (policy+budget): {attribute:?}; attribute (no guard) classes: {attribute_plain:?}; closure: {closure:?}"
    );
    assert_eq!(closure.classes, ["transient"], "Wrapped's own class");
}

// ---------------------------------------------------------------------------------------------
// The breaker: a user's error that is not a timeout by its own `Transient` impl (default
// `is_timeout`/`class`), whose `is_transient` delegates to an inner `io::Error` of kind
// `TimedOut`. On a call that is not idempotent the error is not retried. Whether the breaker
// counts it as a failure must not depend on the driver, nor on `|e| e.is_transient()` vs
// `transient`.
#[derive(Debug)]
struct IoWrap(std::io::Error);
impl From<reattempt::BreakerOpen> for IoWrap {
    fn from(_: reattempt::BreakerOpen) -> Self {
        IoWrap(std::io::Error::other("open"))
    }
}
impl From<reattempt::Elapsed> for IoWrap {
    fn from(_: reattempt::Elapsed) -> Self {
        IoWrap(std::io::Error::other("elapsed"))
    }
}
impl std::fmt::Display for IoWrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl std::error::Error for IoWrap {}
impl Transient for IoWrap {
    fn is_transient(&self) -> bool {
        self.0.is_transient()
    }
}
fn timed_out() -> IoWrap {
    IoWrap(std::io::Error::from(std::io::ErrorKind::TimedOut))
}
fn breaker() -> reattempt::CircuitBreaker {
    reattempt::CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap()
}
struct Api3 {
    breaker: reattempt::CircuitBreaker,
}
impl Api3 {
    #[retryable(max_attempts = 2, circuit_breaker = self.breaker, retry_if = |e: &IoWrap| e.is_transient())]
    async fn call(&self) -> Result<u32, IoWrap> {
        Err(timed_out())
    }
}

#[tokio::test(start_paused = true)]
async fn the_breaker_counts_a_failure_alike_in_every_driver_and_predicate() {
    let api = Api3 { breaker: breaker() };
    let _ = api.call().await;
    let attribute = format!("{:?}", api.breaker.state());

    let b = breaker();
    let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    let _ = policy
        .retry(|| async { Err::<u32, _>(timed_out()) })
        .retry_if(|e: &IoWrap| e.is_transient())
        .without_timeout()
        .circuit_breaker(&b)
        .await;
    let closure_is_transient = format!("{:?}", b.state());

    let b = breaker();
    let _ = policy
        .retry(|| async { Err::<u32, _>(timed_out()) })
        .retry_if(reattempt::transient)
        .without_timeout()
        .circuit_breaker(&b)
        .await;
    let closure_transient = format!("{:?}", b.state());

    assert_eq!(
        (&attribute, &closure_transient),
        (&closure_is_transient, &closure_is_transient),
        "breaker after one non-retried failure: attribute {attribute}, closure |e| e.is_transient() {closure_is_transient}, closure transient {closure_transient}"
    );
}

// ---------------------------------------------------------------------------------------------
// A retrying call nested inside another's `retry_if` (polled to completion there): the inner
// call's judgement of a throttling error must not leak into the outer call's class.
#[derive(Debug)]
struct Plain;
impl From<reattempt::Elapsed> for Plain {
    fn from(_: reattempt::Elapsed) -> Self {
        Plain
    }
}
#[tokio::test(start_paused = true)]
async fn a_retrying_call_nested_in_retry_if_leaks_no_class() {
    let budget = budget();
    let policy = policy();
    let inner_policy = RetryPolicy::builder().max_attempts(1).build().unwrap();
    let call = policy
        .retry(|| async { Err::<u32, _>(Plain) })
        .retry_if(|_: &Plain| {
            let mut nested = Box::pin(
                inner_policy
                    .retry(|| async { Err::<u32, _>(ApiError(StatusCode::TOO_MANY_REQUESTS)) })
                    .retry_if(|e: &ApiError| e.0.is_transient())
                    .without_timeout()
                    .into_future(),
            );
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(nested.as_mut().poll(&mut cx).is_ready());
            true
        })
        .without_timeout()
        .budget(&budget);
    let (_, t) = trace(call).await;
    assert_eq!(run(&t, &budget).classes, ["transient"]);
}
use std::future::{Future as _, IntoFuture as _};

// ---------------------------------------------------------------------------------------------
// A wrapper that gives itself its cause's class, in its own impl: the way to keep an inner
// 429's throttling. Honoured by the attribute and by the closure API's `transient`.
#[derive(Debug)]
struct Delegating(StatusCode);
impl From<reattempt::Elapsed> for Delegating {
    fn from(_: reattempt::Elapsed) -> Self {
        Delegating(StatusCode::GATEWAY_TIMEOUT)
    }
}
impl Transient for Delegating {
    fn is_transient(&self) -> bool {
        self.0.is_transient()
    }
    fn class(&self) -> ErrorClass {
        self.0.class()
    }
}
struct Api4 {
    budget: RetryBudget,
}
impl Api4 {
    #[retryable(policy = &POLICY, budget = self.budget, retry_if = |e: &Delegating| e.is_transient())]
    async fn call(&self) -> Result<u32, Delegating> {
        Err(Delegating(StatusCode::TOO_MANY_REQUESTS))
    }
}

#[tokio::test(start_paused = true)]
async fn a_wrapper_that_states_its_causes_class_has_it_in_every_driver() {
    let api = Api4 { budget: budget() };
    let (_, t) = trace(api.call()).await;
    let attribute = run(&t, &api.budget);

    let budget = budget();
    let policy = policy();
    let call = policy
        .retry(|| async { Err::<u32, _>(Delegating(StatusCode::TOO_MANY_REQUESTS)) })
        .retry_if(reattempt::transient)
        .without_timeout()
        .budget(&budget);
    let (_, t) = trace(call).await;
    let closure = run(&t, &budget);
    assert_eq!(attribute, closure);
    assert_eq!(
        (closure.delays, closure.classes, closure.tokens),
        (
            vec![Duration::from_secs(1)],
            vec!["throttling".to_owned()],
            500 - 5
        ),
        "throttling: from 1 s, 5 tokens"
    );
}
