//! A [reqwest-middleware](https://docs.rs/reqwest-middleware) `Middleware` that retries requests
//! under a [`RetryPolicy`] (feature `reqwest-middleware`, on reqwest-middleware 0.5 and reqwest
//! 0.13): the engine, schedule, guards and names of `#[retryable]`, run by the closure API.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use reattempt::{CircuitBreaker, RetryPolicy};
//! use reattempt::reqwest_middleware::RetryMiddleware;
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
//! HTTP's safety rule (RFC 9110 §9.2.2): a request whose method is not
//! [`idempotent`](crate::http::idempotent) (`POST`, `PATCH`) is retried only when sending it
//! again cannot do its side effect twice: when it carries an `Idempotency-Key` (its own, or the
//! call's with [`idempotency_key_header`](RetryMiddleware::idempotency_key_header)), when the
//! attempt provably never reached the server (a connect error: [`never_sent`](crate::http::never_sent)),
//! or when the server answered 408 or 429 (it did not act on the request; a 500, 502, 503 or
//! 504 may come after it did: a service mesh answers 503 when the upstream reset after reading
//! the request). A `POST` whose response was lost (a reset after the request was
//! read, an attempt the `timeout` cut) is not sent again; the error is returned.
//! [`retry_unsafe_methods(true)`](RetryMiddleware::retry_unsafe_methods) lifts the rule, and
//! [`retry_request`](RetryMiddleware::retry_request) decides per request, seeing the request and
//! the outcome. The rule governs hedges too: with the policy's `hedge_after`, no copy of a
//! request that may not be sent twice starts (a copy is sent while the first may be acting on
//! it). A transient failure the rule keeps from a retry still counts as the dependency's failure
//! for the circuit breaker.
//!
//! A response carries the number of attempts made for it in its extensions
//! ([`Attempts`](crate::http::Attempts): `response.extensions().get::<Attempts>()`); the same
//! value is written into the caller's `Extensions`, which middlewares around this one see after
//! an error too.
//!
//! Each attempt sends a copy of the request ([`reqwest::Request::try_clone`](https://docs.rs/reqwest/0.13/reqwest/struct.Request.html#method.try_clone)) and a copy of the
//! caller's `Extensions` (those of the last attempt that ended are written back). A request whose
//! body is a stream (`reqwest::Body::wrap_stream`, `Body::wrap`) is sent through a
//! [`ReplayBody`](crate::http::ReplayBody): the first attempt's bytes are recorded, up to
//! [`replay_cap`](RetryMiddleware::replay_cap) (64 KiB by default), and replayed to the next
//! attempts. Past the cap the call is committed to the attempt that sends the body: it is sent
//! once, never buffered beyond the cap, and neither retried nor hedged (its outcome is returned
//! as it is). A buffered body (`Vec<u8>`, `Bytes`, `String`, `.json(..)`) is copied, whatever
//! its size (it is in memory already). The request a [`retry_request`](RetryMiddleware::retry_request)
//! hook sees has no body when its body was a stream (it is with the attempts). With
//! [`RetryMiddleware::outer_attempts_header`], an attempt that has attempts left after it (or
//! whose call is nested in one that has) carries
//! [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT), so that a service behind
//! `tower::OuterRetryLayer` leaves the retrying of its `one_layer` calls to this one.
//!
//! A timed-out attempt's error is `reqwest_middleware::Error::Middleware` holding
//! [`Elapsed`] ([`is_timeout`] tells it, and reqwest's own timeouts, apart); a circuit breaker's rejection, one holding [`BreakerOpen`](crate::BreakerOpen); the adaptive
//! throttle's, one holding [`Throttled`](crate::Throttled); a full bulkhead's, one holding
//! [`BulkheadFull`](crate::BulkheadFull) (`err.downcast_ref` through `anyhow`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::classify::Transient;
use crate::classify::http::{Attempts, SafetyRule, Verdict, never_sent, not_processed};
use crate::clients::replay_body::{DEFAULT_REPLAY_CAP, ReplayBody};
use crate::engine::context::RetryContext;
use crate::engine::hooks::Hooks;
use crate::engine::hooks_forward::{ForwardHooks, forward_hooks};
use crate::error::Elapsed;
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::Bulkhead;
use crate::guards::throttle::AdaptiveThrottle;
use crate::schedule::policy::RetryPolicy;

/// The error a request whose body was a stream used to fail with. No request fails with it now:
/// a streaming body is recorded up to [`RetryMiddleware::replay_cap`] and replayed (see
/// [`ReplayBody`](crate::http::ReplayBody)); past the cap the call is sent once, not retried.
///
/// ```
/// #![allow(deprecated)]
/// use reattempt::reqwest_middleware::NotReplayable;
///
/// assert!(NotReplayable.to_string().contains("stream"));
/// ```
#[deprecated(
    since = "0.1.0",
    note = "a streaming body is now replayed up to `RetryMiddleware::replay_cap` (`http::ReplayBody`); no request fails with `NotReplayable`"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotReplayable;

#[allow(deprecated)]
impl std::fmt::Display for NotReplayable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "reattempt: the request's body is a stream and cannot be sent again; buffer it to retry it",
        )
    }
}

#[allow(deprecated)]
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
    safety: SafetyRule,
    outer_attempts: bool,
    request_hook: Option<RequestHook>,
    replay_cap: usize,
}

/// The user's request-aware hook ([`RetryMiddleware::retry_request`]).
type RequestHookFn =
    dyn Fn(&Request, std::result::Result<&Response, &Error>, Verdict) -> bool + Send + Sync;

#[derive(Clone)]
struct RequestHook(Arc<RequestHookFn>);

impl std::fmt::Debug for RequestHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestHook")
    }
}

impl RetryMiddleware {
    /// A middleware retrying under `policy`: no breaker, no budget, no idempotency header, the
    /// name `"retry"`.
    pub fn new(policy: RetryPolicy) -> Self {
        let said = policy.idempotent();
        RetryMiddleware {
            policy,
            hooks: HttpClassify,
            breaker: None,
            budget: None,
            throttle: None,
            bulkhead: None,
            name: "retry",
            // The policy's word on repeating is over the method rule, as `idempotent`'s is.
            safety: SafetyRule {
                said,
                ..SafetyRule::default()
            },
            outer_attempts: false,
            request_hook: None,
            replay_cap: DEFAULT_REPLAY_CAP,
        }
    }
}

impl<H> RetryMiddleware<H> {
    /// Classifies with `hooks` instead of [`HttpClassify`]: the attribute's hooks, by the same
    /// names (`retry_if`, `retry_if_ok`, `retry_after`, `retry_after_ok`, `on_retry`,
    /// `is_timeout`). Each request gets a clone of them. To change one thing, wrap
    /// [`HttpClassify`] and call it for the rest. Hooks that state no `class` (`class_ok`) still
    /// get [`HttpClassify`]'s: the error's and the response status's own (a 429 is throttling;
    /// see [which drivers honour the class](crate::Transient#which-drivers-honour-it-and-when)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reqwest_middleware::Error;
    /// use reattempt::{Hooks, RetryContext, RetryPolicy};
    /// use reattempt::reqwest_middleware::{HttpClassify, RetryMiddleware};
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
            safety: self.safety,
            outer_attempts: self.outer_attempts,
            request_hook: self.request_hook,
            replay_cap: self.replay_cap,
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
    /// use reattempt::{AdaptiveThrottle, RetryPolicy};
    /// use reattempt::reqwest_middleware::RetryMiddleware;
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
    /// use reattempt::{Bulkhead, RetryPolicy};
    /// use reattempt::reqwest_middleware::RetryMiddleware;
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
    /// request), unless the request has one: the server can tell a retry from a new call, and
    /// a non-idempotent request (a `POST`) becomes safe to retry after a lost response.
    #[must_use]
    pub fn idempotency_key_header(mut self) -> Self {
        self.safety.idempotency_key = true;
        self
    }

    /// With `true`, retries a request whatever its method, as if every method were idempotent
    /// (Polly's `DisableForUnsafeHttpMethods` is the opposite switch): for a server that
    /// deduplicates by other means (a key in the body). Default `false`: see the
    /// [module](self) for the safety rule.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::reqwest_middleware::RetryMiddleware;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let middleware = RetryMiddleware::new(policy).retry_unsafe_methods(true);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn retry_unsafe_methods(mut self, retry: bool) -> Self {
        self.safety.unsafe_methods = retry;
        self
    }

    /// Says whether requests through the middleware are safe to repeat after an attempt whose
    /// outcome is unknown (a reset after the request was written, a timeout after sending: see
    /// [`Effect`](crate::Effect)), over RFC 9110's method rule and the policy's
    /// [`idempotent`](crate::RetryPolicyBuilder::idempotent): `true` retries a `POST` after a
    /// lost response (for a server that deduplicates by other means), `false` not even a
    /// `GET`. Not said, the method rule decides (see the [module](self)). The same word as the
    /// attribute's `idempotent`, the closure API's and the tower layer's.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::reqwest_middleware::RetryMiddleware;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let middleware = RetryMiddleware::new(policy).idempotent(true);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.safety.said = Some(idempotent);
        self.policy.idempotent = Some(idempotent);
        self
    }

    /// Decides, for each attempt's outcome, whether the request is sent again, seeing the
    /// request (method, URL, headers), the outcome and what the middleware would decide
    /// ([`Verdict`]: whether the outcome is retryable, whether the request is safe to send
    /// again; the default decision is [`Verdict::retry`]). Called for every outcome, successes
    /// included; `true` retries it (while attempts, `max_elapsed` and the budget allow), so
    /// return `true` only for outcomes worth another attempt. The rest of the settings (the
    /// schedule, `Retry-After`, the guards) apply as before, as do [`hooks`](Self::hooks).
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::reqwest_middleware::RetryMiddleware;
    ///
    /// // `POST /search` has no side effect: retry it as a `GET`.
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let middleware = RetryMiddleware::new(policy).retry_request(|request, _outcome, verdict| {
    ///     verdict.retryable && (verdict.safe || request.url().path() == "/search")
    /// });
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn retry_request<F>(mut self, hook: F) -> Self
    where
        F: Fn(&Request, std::result::Result<&Response, &Error>, Verdict) -> bool
            + Send
            + Sync
            + 'static,
    {
        self.request_hook = Some(RequestHook(Arc::new(hook)));
        self
    }

    /// Sets [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) on an attempt's request
    /// while the call (or a call around it) has attempts left after it, to how many: a service
    /// behind `tower::OuterRetryLayer` whose own calls have
    /// `one_layer` then makes one attempt and leaves the retrying to this call. Off by default,
    /// like the idempotency key: it tells the server about the caller's retries.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::reqwest_middleware::RetryMiddleware;
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

    /// The most bytes of a streaming request body recorded to replay it to the next attempts
    /// (default [`DEFAULT_REPLAY_CAP`], 64 KiB; see [`ReplayBody`]). A streaming body larger
    /// than the cap is sent once, by the attempt that reads it, and the call is not retried
    /// (nor hedged): its outcome is returned as it is. A buffered body is copied for each
    /// attempt whatever its size.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::reqwest_middleware::RetryMiddleware;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// // Uploads of up to 2 MiB are retried; larger ones are sent once.
    /// let middleware = RetryMiddleware::new(policy).replay_cap(2 << 20);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn replay_cap(mut self, bytes: usize) -> Self {
        self.replay_cap = bytes;
        self
    }
}

/// The middleware's default classification (see the [module](self)): transient transport errors
/// and attempts our `timeout` cut are retried, and responses with a transient status, no earlier
/// than their `Retry-After`.
///
/// ```
/// use reattempt::Hooks;
/// use reattempt::reqwest_middleware::HttpClassify;
///
/// let ok = reqwest::Response::from(http::Response::builder().status(503).body("").unwrap());
/// assert!(Hooks::<_, reqwest_middleware::Error>::retry_if_ok(&mut HttpClassify, &ok));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpClassify;

fn elapsed(error: &Error) -> bool {
    matches!(error, Error::Middleware(e) if e.downcast_ref::<Elapsed>().is_some())
}

/// Whether `error` is a timeout: reqwest's own (`is_timeout()`) or an attempt the policy's
/// `timeout` cut, which reaches the caller as `Error::Middleware` holding [`Elapsed`] (a
/// `reqwest::Error` cannot be made to say `is_timeout()`, and a synthetic status would pass for
/// the server's answer). `reqwest_middleware::Error::is_timeout` sees only the first; this sees
/// both.
///
/// ```
/// use reattempt::Elapsed;
/// use reattempt::reqwest_middleware::is_timeout;
///
/// let cut = reqwest_middleware::Error::middleware(Elapsed::new());
/// assert!(!cut.is_timeout());
/// assert!(is_timeout(&cut));
/// ```
pub fn is_timeout(error: &Error) -> bool {
    elapsed(error) || error.is_timeout()
}

/// A call's hooks with the safety rule and the user's request-aware hook on top: the decision
/// of [`RetryMiddleware::retry_request`], by default [`Verdict::retry`].
struct RequestAware<'r, H> {
    hooks: H,
    request: &'r Request,
    safety: SafetyRule,
    hook: Option<&'r RequestHook>,
    /// The request's streaming body, recorded for the next attempts.
    body: Option<&'r ReplayBody<reqwest::Body>>,
    /// The classification's answer for the last error (`retry_if`), which `error_failed` reads
    /// rather than asking again: a user's classification may count what it sees.
    classified: bool,
}

impl<H> RequestAware<'_, H> {
    /// Whether the request's streaming body went past its cap: the call is committed to the
    /// attempt that sent it.
    fn committed(&self) -> bool {
        self.body.is_some_and(ReplayBody::is_capped)
    }

    fn decide(&self, outcome: std::result::Result<&Response, &Error>, retryable: bool) -> bool {
        let not_acted_on = match outcome {
            Ok(response) => not_processed(response.status()),
            Err(Error::Reqwest(e)) => never_sent(e),
            Err(Error::Middleware(_)) => false,
        };
        let (method, headers) = (self.request.method(), self.request.headers());
        let safe = crate::http::safe_to_resend(method, headers, self.safety, not_acted_on);
        let verdict = Verdict { retryable, safe };
        let decision = match self.hook {
            Some(hook) => (hook.0)(self.request, outcome, verdict),
            None => verdict.retry(),
        };
        if retryable && !safe && !decision {
            // A transient failure kept from a retry by the safety rule: an unknown outcome of a
            // request that is not safe to repeat.
            crate::classify::effect::note_refused();
        }
        decision
    }
}

/// HTTP's safety rule and the request-aware hook over the held hooks' classification; every other
/// answer is the held hooks' ([`forward_hooks!`] writes the `Hooks` impl).
impl<H: Hooks<Response, Error>> ForwardHooks<Response, Error> for RequestAware<'_, H> {
    type Inner = H;

    fn inner(&mut self) -> &mut H {
        &mut self.hooks
    }

    fn inner_ref(&self) -> &H {
        &self.hooks
    }

    fn retry_if(&mut self, error: &Error) -> bool {
        // HTTP's safety rule decides about repeating from the request (`decide`): the
        // classification says only whether the failure is transient.
        // The crate knows the error's type: hooks that state no class take its class (a 429
        // status error is throttling), as after `transient`.
        crate::classify::effect::note_class(error, || HttpClassify.class(error));
        let retryable = crate::classify::effect::classify_only(|| self.hooks.retry_if(error));
        self.classified = retryable;
        self.decide(Err(error), retryable)
    }

    /// A transient error that the rule (or the hook) kept from a retry is still the
    /// dependency's failure. Asked after `retry_if` for the same error.
    fn error_failed(&mut self, error: &Error) -> bool {
        self.classified || self.hooks.error_failed(error)
    }

    /// No hedge of a request that may not be sent twice: a copy is sent while the first may be
    /// acting on it.
    fn hedge_allowed(&mut self) -> bool {
        let (method, headers) = (self.request.method(), self.request.headers());
        !self.committed()
            && self.hooks.hedge_allowed()
            && crate::http::safe_to_resend(method, headers, self.safety, false)
    }

    /// HTTP's rule: what the middleware was told (`.idempotent`), else the method's and the
    /// request's `Idempotency-Key` (see [`Hooks::idempotent`]).
    fn idempotent(&mut self) -> Option<bool> {
        let (method, headers) = (self.request.method(), self.request.headers());
        self.hooks
            .idempotent()
            .or_else(|| Some(self.safety.idempotent(method, headers)))
    }

    /// A streaming body past its cap: the call is committed to the attempt that sent it (the
    /// copies in flight of a hedged call still answer; nothing more starts).
    fn retry_refused(&mut self) -> Option<crate::GiveUpReason> {
        self.hooks.retry_refused().or_else(|| {
            self.committed()
                .then_some(crate::GiveUpReason::NotRetryable)
        })
    }

    /// Always `true` (as before this wrapper used the delegation): the request-aware hook
    /// ([`RetryMiddleware::retry_request`]) may retry any response, so the engine asks about
    /// each, whatever the held hooks say of theirs.
    fn retries_ok(&self) -> bool {
        true
    }

    fn retry_if_ok(&mut self, response: &Response) -> bool {
        #[cfg(feature = "spans")]
        crate::clients::http_spans::response_came(response.status());
        // As `retry_if`: HTTP's safety rule decides about repeating a response from the request.
        crate::classify::effect::note_class(response, || response.status().class());
        let retryable = crate::classify::effect::classify_only(|| self.hooks.retry_if_ok(response));
        self.decide(Ok(response), retryable)
    }
}

forward_hooks!(impl[H: Hooks<Response, Error>] Hooks<Response, Error> for RequestAware<'_, H>);

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

    /// A transient status not retried (`x-should-retry: false`, the safety rule) is still the
    /// dependency's failure.
    fn ok_failed(&mut self, response: &Response) -> bool {
        response.status().is_transient()
    }

    fn on_retry(&mut self, _: &Error, _: &RetryContext, _: Duration) {}
}

#[async_trait::async_trait]
impl<H: Hooks<Response, Error> + Clone + Send + Sync + 'static> Middleware for RetryMiddleware<H> {
    async fn handle(
        &self,
        mut req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        // A streaming body is recorded (up to the cap) and replayed; the request kept for the
        // copies has none.
        let body = if req.body().is_some_and(|b| b.as_bytes().is_none()) {
            req.body_mut()
                .take()
                .map(|stream| ReplayBody::new(stream, self.replay_cap))
        } else {
            None
        };
        let body = body.as_ref();
        let template = extensions.clone();
        let written = Mutex::new(None::<Extensions>);
        let (req, template, written) = (&req, &template, &written);
        let (key, outer) = (self.safety.idempotency_key, self.outer_attempts);
        let attempts = AtomicU32::new(0);
        let attempts = &attempts;
        let op = || {
            attempts.fetch_add(1, Ordering::Relaxed);
            let mut copy = req
                .try_clone()
                .expect("a request without a streaming body can be copied");
            if let Some(body) = body {
                *copy.body_mut() = Some(reqwest::Body::wrap(body.clone()));
            }
            crate::http::set_attempt_headers(copy.headers_mut(), key, outer);
            // Inside the attempt: its span, and the call's, take the request's attributes.
            #[cfg(feature = "spans")]
            crate::clients::http_spans::sent(
                copy.method(),
                copy.url().host_str(),
                copy.url().port_or_known_default(),
            );
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
            .hooks(RequestAware {
                hooks: self.hooks.clone(),
                request: req,
                safety: self.safety,
                hook: self.request_hook.as_ref(),
                body,
                classified: false,
            })
            .timeout_into(Error::middleware)
            .name(self.name);
        let mut out = match (&self.breaker, &self.throttle, &self.bulkhead, &self.budget) {
            (None, None, None, None) => call.await,
            // The middleware's error is `Send`: a call may keep its outcome for a long-polling
            // policy's wait (`long_polling_wait`), as with the other guards.
            (None, None, None, Some(g)) => call.budget(g).long_polling_wait().await,
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
        let made = Attempts(attempts.load(Ordering::Relaxed));
        extensions.insert(made);
        if let Ok(response) = &mut out {
            response.extensions_mut().insert(made);
        }
        out
    }
}
