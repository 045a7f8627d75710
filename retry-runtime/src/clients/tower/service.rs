//! [`RetryService`], the service a [`RetryLayer`] makes: its `Service` impl starts a call's
//! [`ResponseFuture`].

use std::fmt::Debug;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use super::future::ResponseFuture;
use super::guards::{BreakerFor, BudgetSlot, BulkheadFor, NoGuard, ThrottleFor};
use super::hooks::Classify;
use super::layer::{RetryLayer, Settings};
use super::replay::{Cloned, Replay, RetryRequest};
use crate::drivers::kept::KeepsOutcome;
use crate::drivers::timeout::{ElapsedInto, TimeoutInto};
use crate::engine::hooks::Hooks;

impl<S, H: Clone, C: Clone, R, B, G, Q, L> Layer<S> for RetryLayer<H, C, R, B, G, Q, L> {
    type Service = RetryService<S, H, C, R, B, G, Q, L>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryService {
            inner,
            settings: Arc::clone(&self.settings),
            hooks: self.hooks.clone(),
            timeout: self.timeout.clone(),
        }
    }
}

/// The service a [`RetryLayer`] makes: each call is retried under the layer's policy.
///
/// `RetryService<S>` names the service of a plain `RetryLayer::new(policy)`, and
/// [`HttpRetryService<S>`][HttpRetryService] (feature `http`) the one of `.http()`, for a
/// struct's field.
///
/// When the service's error type `E` has no conversion from [`Elapsed`], the layer's service is
/// not a `Service`, and a call such as `svc.oneshot(request)` fails with rustc's "the method
/// `oneshot` exists for struct `RetryService<…>`, but its trait bounds were not satisfied"
/// (rustc cannot say which bound while the request type is still unknown; a function returning
/// `impl Service<Req>` gets the full message). The fix: `.timeout_into(|elapsed| …)` or
/// `.without_timeout()` on the layer, `impl From<reattempt::Elapsed>` for an error type of your
/// own, or `map_err(tower::BoxError::from)` below the layer.
///
/// [HttpRetryService]: super::http::HttpRetryService
/// [`Elapsed`]: crate::error::Elapsed
#[derive(Debug)]
pub struct RetryService<
    S,
    H = Classify,
    C = ElapsedInto,
    R = Cloned,
    B = NoGuard,
    G = NoGuard,
    Q = NoGuard,
    L = NoGuard,
> {
    inner: S,
    settings: Arc<Settings<R, B, G, Q, L>>,
    hooks: H,
    timeout: C,
}

impl<S: Clone, H: Clone, C: Clone, R, B, G, Q, L> Clone for RetryService<S, H, C, R, B, G, Q, L> {
    fn clone(&self) -> Self {
        RetryService {
            inner: self.inner.clone(),
            settings: Arc::clone(&self.settings),
            hooks: self.hooks.clone(),
            timeout: self.timeout.clone(),
        }
    }
}

impl<S, Req, H, C, R, B, G, Q, L> Service<Req> for RetryService<S, H, C, R, B, G, Q, L>
where
    S: Service<Req> + Clone,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error> + Clone,
    C: TimeoutInto<S::Error> + Clone,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot + KeepsOutcome,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S, Req, H, C, R, B, G, Q, L>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The readied service makes the call; a fresh clone takes its place (tower's pattern).
        let fresh = self.inner.clone();
        let service = std::mem::replace(&mut self.inner, fresh);
        ResponseFuture::new(
            Arc::clone(&self.settings),
            self.hooks.clone(),
            self.timeout.clone(),
            service,
            request,
        )
    }
}
