//! The closure API: `policy.retry(..).retry_if(..).retry_if_ok(..).retry_after(..).on_retry(..)
//! .error_class(..).circuit_breaker(..).budget(..)`, under the attribute's names.
//!
//! It is given exactly what the attribute is given. The attribute asks an error its class by
//! itself when the error type implements `Transient` (it sees the concrete type); the closure
//! API learns it from a `retry_if` that asks the crate (`reattempt::transient`), but the model's
//! `retryable` is a rule of the user's, so it is told with `.error_class(reattempt::error_class)`,
//! as its rustdoc says a user does then.

use std::future::IntoFuture;

use super::{CallFuture, Driver, Env};
use crate::expect::NAME;
use crate::expect::Scenario;
use crate::model::{TestError, hint, paced, retry_ok, retryable};

pub struct Closure;

impl Driver for Closure {
    fn name(&self) -> &'static str {
        "closure"
    }

    fn unsupported(&self, scenario: &Scenario) -> Option<&'static str> {
        scenario
            .mixes_overload_guards()
            .then_some("the adapter sets a throttle or a bulkhead only alone")
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
        let call = policy
            .retry(move || probe.attempt())
            .retry_if(retryable)
            .retry_if_ok(retry_ok)
            .retry_after(hint)
            .delay_for(paced)
            .on_retry(move |e: &TestError, ctx: &reattempt::RetryContext, d| {
                probe.on_retry(e, ctx.attempt(), d);
            })
            .error_class(reattempt::error_class)
            .name(NAME);
        // A throttle or a bulkhead comes with no other guard (see `unsupported`).
        match (breaker, budget, throttle, bulkhead) {
            (None, None, None, None) => Box::pin(call.into_future()),
            (Some(breaker), None, None, None) => {
                Box::pin(call.circuit_breaker::<TestError>(breaker).into_future())
            }
            // A budget alone keeps no outcome; a long-polling row's wait needs it kept, which
            // the closure API asks for with `long_polling_wait` (`TestError` is `Send`).
            (None, Some(budget), None, None) => {
                Box::pin(call.budget(budget).long_polling_wait().into_future())
            }
            (Some(breaker), Some(budget), None, None) => Box::pin(
                call.circuit_breaker::<TestError>(breaker)
                    .budget(budget)
                    .into_future(),
            ),
            (None, None, Some(t), None) => Box::pin(call.throttle::<TestError>(t).into_future()),
            (None, None, None, Some(b)) => Box::pin(call.bulkhead::<TestError>(b).into_future()),
            _ => unreachable!("a throttle or a bulkhead beside another guard: unsupported"),
        }
    }
}
