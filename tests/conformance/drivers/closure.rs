//! The closure API: `policy.retry(..).when(..).retry_after(..).notify(..).circuit_breaker(..)
//! .budget(..)`. It has no `retry_if_ok`: rows with an `Ok` to retry are skipped here.
//!
//! It is given exactly what the attribute is given. Unlike the attribute, it does not ask an
//! error whether it says it was a timeout unless told with `.timeout_if(..)`: that is left at its
//! default here, so where the defaults differ the table shows it.

use std::future::IntoFuture;

use super::{CallFuture, Driver, Env};
use crate::expect::{NAME, Scenario};
use crate::model::{TestError, hint, retryable};

pub struct Closure;

impl Driver for Closure {
    fn name(&self) -> &'static str {
        "closure"
    }

    fn unsupported(&self, scenario: &Scenario) -> Option<&'static str> {
        scenario
            .uses_retry_if_ok()
            .then_some("the closure API has no retry_if_ok")
    }

    fn call<'a>(&self, env: Env<'a>) -> CallFuture<'a> {
        let Env {
            policy,
            breaker,
            budget,
            probe,
        } = env;
        let call = policy
            .retry(move || probe.attempt())
            .when(retryable)
            .retry_after(hint)
            .notify(move |e: &TestError, ctx: &reattempt::RetryContext, d| {
                probe.on_retry(e, ctx.attempt(), d);
            })
            .name(NAME);
        match (breaker, budget) {
            (None, None) => Box::pin(call.into_future()),
            (Some(breaker), None) => {
                Box::pin(call.circuit_breaker::<TestError>(breaker).into_future())
            }
            (None, Some(budget)) => Box::pin(call.budget(budget).into_future()),
            (Some(breaker), Some(budget)) => Box::pin(
                call.circuit_breaker::<TestError>(breaker)
                    .budget(budget)
                    .into_future(),
            ),
        }
    }
}
