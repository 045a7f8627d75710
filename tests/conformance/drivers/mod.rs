//! The drivers under test. Each adapter names the runtime's items for its driver in one place,
//! so a rename is a few-line change there. A driver added later (hedging, a tower layer) is one
//! more module implementing [`Driver`] and one more entry in [`ALL`].

pub mod attribute;
pub mod attribute_loop;
pub mod closure;
#[cfg(feature = "tower")]
pub mod tower;

use std::future::Future;
use std::pin::Pin;

use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy};

use crate::expect::Scenario;
use crate::harness::Probe;
use crate::model::TestError;

/// What a driver is handed for one run: the scenario's policy and guards (built at run time),
/// and the probe whose `attempt` is the body and whose `on_retry` is the hook.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub policy: &'a RetryPolicy,
    pub breaker: Option<&'a CircuitBreaker>,
    pub budget: Option<&'a RetryBudget>,
    pub probe: &'a Probe,
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
}

/// Every driver, in report order.
pub static ALL: &[&dyn Driver] = &[
    &attribute::Attribute,
    &attribute_loop::AttributeLoop,
    &closure::Closure,
    #[cfg(feature = "tower")]
    &tower::Tower,
];
