//! The drivers under test. Each adapter names the runtime's items for its driver in one place,
//! so a rename is a few-line change there. A driver added later is one more module implementing
//! [`Driver`] and one more entry in [`ALL`].

pub mod attribute;
pub mod attribute_loop;
pub mod closure;
#[cfg(feature = "tonic")]
pub mod grpc;
#[cfg(feature = "reqwest-middleware")]
pub mod middleware;
#[cfg(feature = "tower")]
pub mod tower;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, RetryBudget, RetryPolicy};

use crate::expect::Scenario;
use crate::harness::Probe;
use crate::model::{Ev, TestError};

/// What a driver is handed for one run: the scenario's policy and guards (built at run time),
/// and the probe whose `attempt` is the body and whose `on_retry` is the hook. The harness owns
/// the guards and the probe behind `Arc`s: a driver that borrows them uses `&**` (or lets
/// `&Arc<T>` coerce to `&T`); one that must own them (`'static` hooks and guards) clones the
/// `Arc`.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub policy: &'a RetryPolicy,
    pub breaker: Option<&'a Arc<CircuitBreaker>>,
    pub budget: Option<&'a Arc<RetryBudget>>,
    pub throttle: Option<&'a Arc<AdaptiveThrottle>>,
    pub bulkhead: Option<&'a Arc<Bulkhead>>,
    pub probe: &'a Arc<Probe>,
}

impl Scenario {
    /// Whether the scenario has a throttle or a bulkhead together with another guard (the
    /// attribute drivers have one fn per combination, and none for these).
    pub fn mixes_overload_guards(&self) -> bool {
        let overload = self.throttle.is_some() || self.bulkhead.is_some();
        let others = [
            self.breaker.is_some(),
            self.budget.is_some(),
            self.throttle.is_some(),
            self.bulkhead.is_some(),
        ]
        .into_iter()
        .filter(|&g| g)
        .count();
        overload && others > 1
    }
}

/// One retrying call, not yet polled.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<u32, TestError>> + 'a>>;

/// A way of making a retrying call. Every driver gets the same settings under the same meaning:
/// `retry_if` = [`crate::model::retryable`], `retry_after` = [`crate::model::hint`],
/// `retry_if_ok` = [`crate::model::retry_ok`] (where the driver has it), `on_retry` = the
/// probe's, the call's name = [`crate::expect::NAME`].
pub trait Driver: Sync {
    /// Its name in reports.
    fn name(&self) -> &'static str;

    /// Why this driver cannot run `scenario` (a setting it lacks), if it cannot.
    fn unsupported(&self, scenario: &Scenario) -> Option<&'static str> {
        let _ = scenario;
        None
    }

    /// The call, made with `env`.
    fn call<'a>(&self, env: Env<'a>) -> CallFuture<'a>;

    /// The events as the table writes them. The events name the error type the engine sees
    /// (`error_type`): a driver whose engine sees another type than [`TestError`] (the reqwest
    /// middleware's `reqwest_middleware::Error`, which carries it) says so here, and its events
    /// are compared as if they named `TestError`: every other field as it is.
    fn normalized(&self, events: Vec<Ev>) -> Vec<Ev> {
        events
    }
}

/// `events` with the error type `Ours` (the engine's, in a driver whose error carries the
/// table's) named as [`TestError`], every other field as it is (see [`Driver::normalized`]).
#[cfg(any(feature = "reqwest-middleware", feature = "tonic"))]
pub fn naming_test_error<Ours>(events: Vec<Ev>) -> Vec<Ev> {
    let ours = std::any::type_name::<Ours>();
    let table = std::any::type_name::<TestError>();
    events
        .into_iter()
        .map(|mut e| {
            for (k, v) in &mut e.fields {
                if k == "error_type" && v == ours {
                    table.clone_into(v);
                }
            }
            e
        })
        .collect()
}

/// The row's class of an error a driver carries inside its own (the reqwest middleware's
/// `Error::Middleware`, a gRPC status's source): a scripted [`TestError`], or what the runtime
/// made the error from (`Elapsed`: the policy's timeout cut the attempt; `BreakerOpen`,
/// `Throttled`, `BulkheadFull`: a guard turned it away). `None` for anything else.
#[cfg(any(feature = "reqwest-middleware", feature = "tonic"))]
pub fn row_class(error: &(dyn std::error::Error + 'static)) -> Option<TestError> {
    use reattempt::{BreakerOpen, BulkheadFull, Elapsed, Throttled};
    if let Some(e) = error.downcast_ref::<TestError>() {
        Some(*e)
    } else if error.is::<Elapsed>() {
        Some(TestError::TimedOut)
    } else if error.is::<BreakerOpen>() {
        Some(TestError::Rejected)
    } else if error.is::<Throttled>() {
        Some(TestError::Shed)
    } else if error.is::<BulkheadFull>() {
        Some(TestError::Full)
    } else {
        None
    }
}

/// Every driver, in report order.
pub static ALL: &[&dyn Driver] = &[
    &attribute::Attribute,
    &attribute_loop::AttributeLoop,
    &closure::Closure,
    #[cfg(feature = "tower")]
    &tower::Tower,
    #[cfg(feature = "reqwest-middleware")]
    &middleware::ReqwestMiddleware,
    #[cfg(feature = "tonic")]
    &grpc::Grpc,
];
