//! A [reqwest-middleware](https://docs.rs/reqwest-middleware) `Middleware` that retries requests
//! under a [`RetryPolicy`] (feature `reqwest-middleware`, on reqwest-middleware 0.5 and reqwest
//! 0.13): the engine, schedule, guards and names of `#[retryable]`, run by the closure API.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use retry_runtime::{CircuitBreaker, RetryPolicy};
//! use retry_runtime::reqwest_middleware::RetryMiddleware;
//!
//! let policy = RetryPolicy::builder()
//!     .max_attempts(4)
//!     .timeout(Duration::from_secs(2))
//!     .max_delay(Duration::from_secs(30))
//!     .build()
//!     .unwrap();
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(
//!         RetryMiddleware::new(policy)
//!             .idempotency_key_header()
//!             .circuit_breaker(Arc::new(CircuitBreaker::builder().build().unwrap()))
//!             .name("payments"),
//!     )
//!     .build();
//! # let _ = client;
//! ```
//!
//! What it retries: a transport error that is transient ([`Transient` for
//! `reqwest::Error`](crate::Transient): connect, timeout, request errors), an attempt the policy's
//! `timeout` cut (a response that never came), and a response with a transient status (408, 429,
//! 500, 502, 503, 504), no earlier than its `Retry-After` asks (both forms; a hint beyond
//! `max_delay` or the remaining `max_elapsed` returns that response at once). When no retry is
//! left, the last response is returned as it is (a 503 stays an `Ok` response, as without the
//! middleware). Other errors (another middleware's) are returned at once.
//!
//! Each attempt sends a copy of the request ([`reqwest::Request::try_clone`]) and a copy of the
//! caller's `Extensions` (those of the last attempt that ended are written back). A request whose
//! body is a stream cannot be copied: the call fails at once with [`NotReplayable`], before
//! anything is sent, rather than being sent once without retries. With
//! [`RetryMiddleware::outer_attempts_header`], an attempt that has attempts left after it (or
//! whose call is nested in one that has) carries
//! [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT), so that a service behind
//! `tower::OuterRetryLayer` leaves the retrying of its `one_layer` calls to this one.
//!
//! A timed-out attempt's error is `reqwest_middleware::Error::Middleware` holding
//! [`Elapsed`]; a circuit breaker's rejection, one holding [`BreakerOpen`](crate::BreakerOpen); the adaptive
//! throttle's, one holding [`Throttled`](crate::Throttled); a full bulkhead's, one holding
//! [`BulkheadFull`](crate::BulkheadFull) (`err.downcast_ref` through `anyhow`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::engine::context::RetryContext;
use crate::engine::hooks::Hooks;
use crate::error::Elapsed;
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::Bulkhead;
use crate::guards::throttle::AdaptiveThrottle;
use crate::integrations::classify::Transient;
use crate::schedule::policy::RetryPolicy;

/// A request whose body is a stream cannot be sent again, so it is not sent at all by a
/// retrying client: buffer the body (`Vec<u8>`, `Bytes`, `String`, `.json(..)`) to retry it.
///
/// ```
/// use retry_runtime::reqwest_middleware::NotReplayable;
///
/// assert!(NotReplayable.to_string().contains("stream"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotReplayable;

impl std::fmt::Display for NotReplayable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "reattempt: the request's body is a stream and cannot be sent again; buffer it to retry it",
        )
    }
}

impl std::error::Error for NotReplayable {}

/// A reqwest-middleware `Middleware` retrying each request under a policy; see the
/// [module](self). `H` is its classification: [`HttpClassify`] unless [`hooks`](Self::hooks)
/// replaces it.
#[derive(Debug, Clone)]
pub struct RetryMiddleware<H = HttpClassify> {
    policy: RetryPolicy,
    hooks: H,
    breaker: Option<Arc<CircuitBreaker>>,
    budget: Option<Arc<RetryBudget>>,
    throttle: Option<Arc<AdaptiveThrottle>>,
    bulkhead: Option<Arc<Bulkhead>>,
    name: &'static str,
    idempotency_key: bool,
    outer_attempts: bool,
}

impl RetryMiddleware {
    /// A middleware retrying under `policy`: no breaker, no budget, no idempotency header, the
    /// name `"retry"`.
    pub fn new(policy: RetryPolicy) -> Self {
        RetryMiddleware {
            policy,
            hooks: HttpClassify,
            breaker: None,
            budget: None,
            throttle: None,
            bulkhead: None,
            name: "retry",
            idempotency_key: false,
            outer_attempts: false,
        }
    }
}

impl<H> RetryMiddleware<H> {
    /// Classifies with `hooks` instead of [`HttpClassify`]: the attribute's hooks, by the same
    /// names (`retry_if`, `retry_if_ok`, `retry_after`, `retry_after_ok`, `on_retry`,
    /// `is_timeout`). Each request gets a clone of them. To change one thing, wrap
    /// [`HttpClassify`] and call it for the rest.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reqwest_middleware::Error;
    /// use retry_runtime::{Hooks, RetryContext, RetryPolicy};
    /// use retry_runtime::reqwest_middleware::{HttpClassify, RetryMiddleware};
    ///
    /// /// The standard classification, but a 404 is retried too (an eventually consistent read).
    /// #[derive(Clone)]
    /// struct AlsoNotFound;
    ///
    /// impl Hooks<reqwest::Response, Error> for AlsoNotFound {
    ///     fn retry_if(&mut self, e: &Error) -> bool { HttpClassify.retry_if(e) }
    ///     fn retry_if_ok(&mut self, r: &reqwest::Response) -> bool {
    ///         r.status() == 404 || HttpClassify.retry_if_ok(r)
    ///     }
    ///     fn retry_after_ok(&mut self, r: &reqwest::Response) -> Option<Duration> {
    ///         HttpClassify.retry_after_ok(r)
    ///     }
    ///     fn is_timeout(&mut self, e: &Error) -> bool { HttpClassify.is_timeout(e) }
    ///     fn on_retry(&mut self, _: &Error, ctx: &RetryContext, d: Duration) {
    ///         eprintln!("attempt {} failed; again in {d:?}", ctx.attempt());
    ///     }
    /// }
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let middleware = RetryMiddleware::new(policy).hooks(AlsoNotFound);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn hooks<K>(self, hooks: K) -> RetryMiddleware<K> {
        RetryMiddleware {
            policy: self.policy,
            hooks,
            breaker: self.breaker,
            budget: self.budget,
            throttle: self.throttle,
            bulkhead: self.bulkhead,
            name: self.name,
            idempotency_key: self.idempotency_key,
            outer_attempts: self.outer_attempts,
        }
    }

    /// Passes every attempt through `breaker`: while it is open, a request fails at once with
    /// [`BreakerOpen`](crate::BreakerOpen) (inside `Error::Middleware`), never retried.
    #[must_use]
    pub fn circuit_breaker(mut self, breaker: Arc<CircuitBreaker>) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// Pays each retry from `budget`, and each success back into it.
    #[must_use]
    pub fn budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Passes every attempt (retries included) through the client-side adaptive `throttle`
    /// (after the breaker, if any): an attempt it sheds is not sent, and the request fails at
    /// once with [`Throttled`](crate::Throttled) (inside `Error::Middleware`), never retried.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retry_runtime::{AdaptiveThrottle, RetryPolicy};
    /// use retry_runtime::reqwest_middleware::RetryMiddleware;
    ///
    /// let throttle = Arc::new(AdaptiveThrottle::builder().build().unwrap());
    /// let middleware = RetryMiddleware::new(RetryPolicy::builder().build().unwrap()).throttle(throttle);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn throttle(mut self, throttle: Arc<AdaptiveThrottle>) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// Holds a slot of `bulkhead` for each request, from before its first attempt to its end,
    /// its sleeps included: when every slot is taken (for the bulkhead's `max_wait`, if it has
    /// one) nothing is sent, and the request fails at once with [`BulkheadFull`](crate::BulkheadFull) (inside
    /// `Error::Middleware`), never retried.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retry_runtime::{Bulkhead, RetryPolicy};
    /// use retry_runtime::reqwest_middleware::RetryMiddleware;
    ///
    /// let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(10).build().unwrap());
    /// let middleware = RetryMiddleware::new(RetryPolicy::builder().build().unwrap()).bulkhead(bulkhead);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn bulkhead(mut self, bulkhead: Arc<Bulkhead>) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// Labels the calls in events (default `"retry"`).
    #[must_use]
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Sets an `Idempotency-Key` header, the call's key (the same on every attempt of one
    /// request), unless the request has one.
    #[must_use]
    pub fn idempotency_key_header(mut self) -> Self {
        self.idempotency_key = true;
        self
    }

    /// Sets [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) on an attempt's request
    /// while the call (or a call around it) has attempts left after it, to how many: a service
    /// behind `tower::OuterRetryLayer` whose own calls have
    /// `one_layer` then makes one attempt and leaves the retrying to this call. Off by default,
    /// like the idempotency key: it tells the server about the caller's retries.
    ///
    /// ```
    /// use retry_runtime::RetryPolicy;
    /// use retry_runtime::reqwest_middleware::RetryMiddleware;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let middleware = RetryMiddleware::new(policy).outer_attempts_header();
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn outer_attempts_header(mut self) -> Self {
        self.outer_attempts = true;
        self
    }
}

/// The middleware's default classification (see the [module](self)): transient transport errors
/// and attempts our `timeout` cut are retried, and responses with a transient status, no earlier
/// than their `Retry-After`.
///
/// ```
/// use retry_runtime::Hooks;
/// use retry_runtime::reqwest_middleware::HttpClassify;
///
/// let ok = reqwest::Response::from(http::Response::builder().status(503).body("").unwrap());
/// assert!(Hooks::<_, reqwest_middleware::Error>::retry_if_ok(&mut HttpClassify, &ok));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpClassify;

fn elapsed(error: &Error) -> bool {
    matches!(error, Error::Middleware(e) if e.downcast_ref::<Elapsed>().is_some())
}

impl Hooks<Response, Error> for HttpClassify {
    fn retry_if(&mut self, error: &Error) -> bool {
        match error {
            Error::Reqwest(e) => e.is_transient(),
            Error::Middleware(_) => elapsed(error),
        }
    }

    fn retry_if_ok(&mut self, response: &Response) -> bool {
        crate::http::retried_response(response.status(), response.headers())
    }

    fn retry_after_ok(&mut self, response: &Response) -> Option<Duration> {
        crate::http::server_hint(response.headers()).delay
    }

    fn is_timeout(&mut self, error: &Error) -> bool {
        elapsed(error) || matches!(error, Error::Reqwest(e) if e.is_timeout())
    }

    fn class(&mut self, error: &Error) -> crate::ErrorClass {
        match error {
            _ if self.is_timeout(error) => crate::ErrorClass::Timeout,
            Error::Reqwest(e) => e.class(),
            Error::Middleware(_) => crate::ErrorClass::Transient,
        }
    }

    /// A 429 response is throttling.
    fn class_ok(&mut self, response: &Response) -> crate::ErrorClass {
        response.status().class()
    }

    fn on_retry(&mut self, _: &Error, _: &RetryContext, _: Duration) {}
}

#[async_trait::async_trait]
impl<H: Hooks<Response, Error> + Clone + Send + Sync + 'static> Middleware for RetryMiddleware<H> {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        if req.try_clone().is_none() {
            return Err(Error::middleware(NotReplayable));
        }
        let template = extensions.clone();
        let written = Mutex::new(None::<Extensions>);
        let (req, template, written) = (&req, &template, &written);
        let (key, outer) = (self.idempotency_key, self.outer_attempts);
        let op = || {
            let mut copy = req.try_clone().expect("checked before the first attempt");
            crate::http::set_attempt_headers(copy.headers_mut(), key, outer);
            let mut ext = template.clone();
            let next = next.clone();
            async move {
                let out = next.run(copy, &mut ext).await;
                *written
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(ext);
                out
            }
        };
        let call = self
            .policy
            .retry(op)
            .hooks(self.hooks.clone())
            .timeout_into(Error::middleware)
            .name(self.name);
        let out = match (&self.breaker, &self.throttle, &self.bulkhead, &self.budget) {
            (None, None, None, None) => call.await,
            (None, None, None, Some(g)) => call.budget(g).await,
            (breaker, throttle, bulkhead, budget) => {
                let call = call.guards(
                    breaker.as_deref(),
                    throttle.as_deref(),
                    bulkhead.as_deref(),
                    (
                        |open| Error::middleware(open),
                        |shed| Error::middleware(shed),
                        |full| Error::middleware(full),
                    ),
                );
                match budget {
                    Some(g) => call.budget(g).await,
                    None => call.await,
                }
            }
        };
        if let Some(ext) = written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            *extensions = ext;
        }
        out
    }
}
