//! The tower layer: `RetryLayer::new(policy).retry_if(..).retry_if_ok(..).retry_after(..)
//! .on_retry(..).error_class(..).circuit_breaker(..).budget(..).name(..)` around a service whose
//! `call` is the probe's attempt, under the attribute's names.
//!
//! It is given exactly what the closure API is given: the layer is generic over the error type
//! and the model's `retryable` is a rule of the user's (it does not ask `reattempt::transient`,
//! which would tell the class), so, like the closure API, it is told each error's class
//! (`.error_class(reattempt::error_class)`). The layer owns its policy (a clone of the scenario's)
//! and holds clones of the harness's `Arc`s of the guards, so the harness reads them afterwards
//! as for the other drivers.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use reattempt::tower::RetryLayer;
use tower_layer::Layer;
use tower_service::Service;

use super::{CallFuture, Driver, Env};
use crate::expect::NAME;
use crate::expect::Scenario;
use crate::harness::Probe;
use crate::model::{TestError, hint, paced, retry_ok, retryable};

pub struct Tower;

/// The inner service: each call is one attempt of the probe's script.
#[derive(Clone, Copy)]
struct Scripted<'a>(&'a Probe);

impl<'a> Service<()> for Scripted<'a> {
    type Response = u32;
    type Error = TestError;
    type Future = Pin<Box<dyn Future<Output = Result<u32, TestError>> + 'a>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), TestError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        // The attempt's start and context are recorded when it is first polled, as with the
        // other drivers' bodies: `call` runs inside the call's context, and so does its future.
        Box::pin(self.0.attempt())
    }
}

impl Driver for Tower {
    fn name(&self) -> &'static str {
        "tower"
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
        let layer = RetryLayer::new(policy.clone())
            .retry_if(retryable)
            .retry_if_ok(retry_ok)
            .retry_after(hint)
            .delay_for(paced)
            .on_retry(move |e: &TestError, ctx: &reattempt::RetryContext, d| {
                probe.on_retry(e, ctx.attempt(), d);
            })
            .error_class(reattempt::error_class::<TestError>)
            .name(NAME);
        let inner = Scripted(probe);
        if let Some(throttle) = throttle {
            return Box::pin(once(layer.throttle(Arc::clone(throttle)).layer(inner)));
        }
        if let Some(bulkhead) = bulkhead {
            return Box::pin(once(layer.bulkhead(Arc::clone(bulkhead)).layer(inner)));
        }
        match (breaker.cloned(), budget.cloned()) {
            (None, None) => Box::pin(once(layer.layer(inner))),
            (Some(breaker), None) => Box::pin(once(layer.circuit_breaker(breaker).layer(inner))),
            (None, Some(budget)) => Box::pin(once(layer.budget(budget).layer(inner))),
            (Some(breaker), Some(budget)) => Box::pin(once(
                layer.circuit_breaker(breaker).budget(budget).layer(inner),
            )),
        }
    }
}

/// One request through `svc`: ready, then call (what `tower::ServiceExt::oneshot` does).
async fn once<S: Service<(), Response = u32, Error = TestError>>(
    mut svc: S,
) -> Result<u32, TestError> {
    poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(()).await
}
