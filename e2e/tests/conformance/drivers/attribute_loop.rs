//! The attribute's loop: the same fns as [`super::attribute`], each also taking a `&mut ()`, so
//! that its attempts cannot overlap and `#[retryable(policy = …)]` expands to the generated loop
//! rather than the closure driver (which an `async fn` whose attempts may overlap runs through,
//! so as to honour a policy's `hedge_after`). It cannot hedge: the hedging rows skip it.

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, RetryBudget, RetryPolicy, retryable};

use super::{CallFuture, Driver, Env};
use crate::expect::Scenario;
use crate::harness::Probe;
use crate::model::{TestError, hint, paced, retry_ok, retryable};

pub struct AttributeLoop;

impl Driver for AttributeLoop {
    fn name(&self) -> &'static str {
        "attr-loop"
    }

    fn unsupported(&self, scenario: &Scenario) -> Option<&'static str> {
        if scenario.mixes_overload_guards() {
            return Some("no fn for a throttle or a bulkhead beside another guard");
        }
        scenario
            .policy
            .hedge_after_ms
            .map(|_| "a fn whose attempts cannot overlap ignores hedge_after (with a WARN)")
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
            return Box::pin(async move { with_throttle(policy, throttle, probe, &mut ()).await });
        }
        if let Some(bulkhead) = bulkhead {
            return Box::pin(async move { with_bulkhead(policy, bulkhead, probe, &mut ()).await });
        }
        match (breaker, budget) {
            (None, None) => Box::pin(async move { plain(policy, probe, &mut ()).await }),
            (Some(breaker), None) => {
                Box::pin(async move { with_breaker(policy, breaker, probe, &mut ()).await })
            }
            (None, Some(budget)) => {
                Box::pin(async move { with_budget(policy, budget, probe, &mut ()).await })
            }
            (Some(breaker), Some(budget)) => {
                Box::pin(async move { with_both(policy, breaker, budget, probe, &mut ()).await })
            }
        }
    }
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance")]
async fn plain(policy: &RetryPolicy, probe: &Probe, _exclusive: &mut ()) -> Result<u32, TestError> {
    probe.attempt().await
}

#[retryable(policy = policy, retry_if = retryable, retry_if_ok = retry_ok, retry_after = hint, delay_for = paced,
            on_retry = |e, ctx, d| probe.on_retry(e, ctx.attempt(), d), name = "conformance",
            circuit_breaker = breaker)]
async fn with_breaker(
    policy: &RetryPolicy,
    breaker: &CircuitBreaker,
    probe: &Probe,
    _exclusive: &mut (),
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
    _exclusive: &mut (),
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
    _exclusive: &mut (),
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
    _exclusive: &mut (),
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
    _exclusive: &mut (),
) -> Result<u32, TestError> {
    probe.attempt().await
}
