//! The attribute: `#[retryable(policy = …, …)]` async fns taking the scenario's policy and
//! guards as arguments. Their attempts may overlap (no `&mut`), so they expand through the
//! closure driver, which honours the policy's `hedge_after` (see [`super::attribute_loop`] for
//! the generated loop). The `circuit_breaker`/`budget` keys take a `&CircuitBreaker`/
//! `&RetryBudget`, not an `Option`, so there is one fn per combination (and the `throttle` and
//! `bulkhead` keys one fn each, alone: the rows that have them have no other guard).

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, RetryBudget, RetryPolicy, retryable};

use super::{CallFuture, Driver, Env};
use crate::expect::Scenario;
use crate::harness::Probe;
use crate::model::{TestError, hint, paced, retry_ok, retryable};

pub struct Attribute;

impl Driver for Attribute {
    fn name(&self) -> &'static str {
        "attribute"
    }

    fn unsupported(&self, scenario: &Scenario) -> Option<&'static str> {
        scenario
            .mixes_overload_guards()
            .then_some("no fn for a throttle or a bulkhead beside another guard")
    }

    fn call<'a>(&self, env: Env<'a>) -> CallFuture<'a> {
        let Env {
            policy,
            breaker,
            budget,
            throttle,
            bulkhead,
            probe,
        } = env;
        if let Some(throttle) = throttle {
            return Box::pin(with_throttle(policy, throttle, probe));
        }
        if let Some(bulkhead) = bulkhead {
            return Box::pin(with_bulkhead(policy, bulkhead, probe));
        }
        match (breaker, budget) {
            (None, None) => Box::pin(plain(policy, probe)),
            (Some(breaker), None) => Box::pin(with_breaker(policy, breaker, probe)),
            (None, Some(budget)) => Box::pin(with_budget(policy, budget, probe)),
            (Some(breaker), Some(budget)) => Box::pin(with_both(policy, breaker, budget, probe)),
        }
    }
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance")]
async fn plain(policy: &RetryPolicy, probe: &Probe) -> Result<u32, TestError> {
    probe.attempt().await
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance",
            circuit_breaker = breaker)]
async fn with_breaker(
    policy: &RetryPolicy,
    breaker: &CircuitBreaker,
    probe: &Probe,
) -> Result<u32, TestError> {
    probe.attempt().await
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance",
            budget = budget)]
async fn with_budget(
    policy: &RetryPolicy,
    budget: &RetryBudget,
    probe: &Probe,
) -> Result<u32, TestError> {
    probe.attempt().await
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance",
            circuit_breaker = breaker, budget = budget)]
async fn with_both(
    policy: &RetryPolicy,
    breaker: &CircuitBreaker,
    budget: &RetryBudget,
    probe: &Probe,
) -> Result<u32, TestError> {
    probe.attempt().await
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance",
            throttle = throttle)]
async fn with_throttle(
    policy: &RetryPolicy,
    throttle: &AdaptiveThrottle,
    probe: &Probe,
) -> Result<u32, TestError> {
    probe.attempt().await
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance",
            bulkhead = bulkhead)]
async fn with_bulkhead(
    policy: &RetryPolicy,
    bulkhead: &Bulkhead,
    probe: &Probe,
) -> Result<u32, TestError> {
    probe.attempt().await
}
