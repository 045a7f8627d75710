//! A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) that retries any [`Service`](https://docs.rs/tower-service/0.3/tower_service/trait.Service.html) under a [`RetryPolicy`] (feature `tower`): the
//! same engine, schedule, guards and names as `#[retryable]` and the closure API.
//!
//! ```
//! // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     use std::io;
//!     use std::sync::atomic::{AtomicU32, Ordering};
//!     use std::sync::Arc;
//!     use reattempt::RetryPolicy;
//!     use reattempt::tower::RetryLayer;
//!     use tower::Layer;
//!     use tower::Service;
//!
//!     /// A flaky dependency: fails twice, then answers with the attempt that reached it.
//!     #[derive(Clone)]
//!     struct Flaky(Arc<AtomicU32>);
//!     impl Service<String> for Flaky {
//!         type Response = String;
//!         type Error = io::Error;
//!         type Future = std::future::Ready<io::Result<String>>;
//!         fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
//!             std::task::Poll::Ready(Ok(()))
//!         }
//!         fn call(&mut self, req: String) -> Self::Future {
//!             let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
//!             let attempt = reattempt::context().map_or(0, |c| c.attempt());
//!             std::future::ready(if n < 3 {
//!                 Err(io::ErrorKind::ConnectionReset.into())
//!             } else {
//!                 Ok(format!("{req}: answered attempt {attempt}"))
//!             })
//!         }
//!     }
//!
//!     let policy = RetryPolicy::builder().max_attempts(4).build().unwrap();
//!     let mut svc = RetryLayer::new(policy)
//!         .retry_if(|e: &io::Error| e.kind() == io::ErrorKind::ConnectionReset)
//!         .layer(Flaky(Arc::default()));
//!     std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
//!     assert_eq!(svc.call("ping".into()).await.unwrap(), "ping: answered attempt 3");
//! }
//! ```
//!
//! How it runs a call:
//! - each attempt sends a fresh copy of the request ([`Replay`]): a request that cannot be
//!   copied does not compile (a streaming body), so a call is never silently sent once; with
//!   the feature `http`, [`ReplayBodyLayer`] makes a streaming body replayable up to a cap
//!   (see [`RetryLayer::http`]);
//! - the service that [`poll_ready`](Service::poll_ready) readied makes the first attempt, and
//!   every later attempt asks it `poll_ready` again before calling it (tower's contract, per
//!   attempt); the layer's own `poll_ready` is the inner service's. A `poll_ready` that
//!   returns an error means the service has failed (tower's contract): it is not asked again,
//!   and the call ends with that error, not retried, as with tower's own `Retry` (the breaker
//!   counts it as a failure);
//! - the inner service's `call` and its future run inside the call's [`context()`](crate::context()),
//!   so the service sees the attempt number and the call's idempotency key;
//! - the per-attempt `timeout` covers both `poll_ready` and the response; `max_elapsed`, the
//!   circuit breaker (one permit per attempt), the budget, the adaptive throttle (asked for
//!   each attempt) and the bulkhead (one slot per call, taken before its first attempt) work
//!   as for the attribute;
//! - with the policy's `hedge_after` (fixed or a quantile), a call hedges as the attribute and
//!   the closure API do (the same loop): if no attempt has answered within it, the next starts
//!   alongside, on its own clone of the inner service, which it asks `poll_ready` first;
//!   `max_attempts` counts every copy, the first accepted answer wins and the others are dropped
//!   (their breaker permits go back unused); copies share the call's context and key; each copy
//!   passes the breaker and the throttle, a hedge is paid from the budget, and the call holds one
//!   bulkhead slot for all of them.
//!
//! The layer holds its settings behind one `Arc`: a call clones that `Arc`, the hooks and the
//! inner service (as tower's own retry does), and allocates nothing else (a call that waits
//! for a bulkhead's slot boxes its wait; a hedged call boxes its copies, as the closure API's).

use std::fmt::Debug;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower_layer::Layer;
use tower_service::Service;

use crate::ErrorClass;
use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromThrottled};
use crate::drivers::hedged::{HedgeCall, Hedged, poll_hedged};
use crate::drivers::kept::{self, KeepsOutcome, NotKept};
#[cfg(feature = "testing")]
use crate::drivers::timed::set_timer_at;
use crate::drivers::timed::{poll_copy, set_timer};
use crate::drivers::timeout::{ElapsedInto, NoTimeout, TimeoutInto};
use crate::engine::context::{RetryContext, enter};
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::{
    ClassHook, ClassOf, DelayFor, DelayHook, DelaySlot, ErrorHook, Hooks, OkHook, OnRetryHook,
    TimeoutIf, Unset,
};
use crate::engine::state::{Decision, Detached, Engine, Start};
use crate::engine::steps;
use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::{Bulkhead, CallSlot, OwnedSlots, SlotSource};
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admitted, Guards};
use crate::schedule::policy::RetryPolicy;

/// How a request is copied for each attempt.
///
/// [`Cloned`] (the default) copies a `Clone` request; with the feature `http`,
/// [`HttpRequests`] copies an `http::Request<B>` whose body `B` is `Clone` (a `String`, `Bytes`,
/// `http_body_util::Full<Bytes>`), and can set an `Idempotency-Key` header. A request that cannot
/// be copied (a streaming body) does not compile: a retrying layer never sends it once silently.
#[diagnostic::on_unimplemented(
    message = "the retry layer cannot copy a `{Req}` for each attempt",
    label = "no copy of `{Req}` per attempt",
    note = "a request must be `Clone` (or, with `.http()`, an `http::Request<B>` with a `Clone` body such as `Full<Bytes>`): a streaming body cannot be sent twice"
)]
pub trait Replay<Req> {
    /// The request the next attempt sends. Called inside the call's
    /// [`context()`](crate::context()), so it can read the attempt number and the call's key.
    fn replay(&self, request: &Req) -> Req;
}

/// A layer's replay slot told whether its requests are safe to repeat
/// ([`RetryLayer::idempotent`]): [`Cloned`] has nothing to change (the policy carries it); with
/// the feature `http`, [`HttpRequests`] puts it over HTTP's method rule.
pub trait SaysIdempotent {
    /// The slot, told.
    #[must_use]
    fn said_idempotent(self, idempotent: bool) -> Self;
}

impl SaysIdempotent for Cloned {
    fn said_idempotent(self, idempotent: bool) -> Self {
        let _ = idempotent;
        self
    }
}

/// Copies a `Clone` request for each attempt (the default [`Replay`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Cloned;

impl<Req: Clone> Replay<Req> for Cloned {
    #[inline]
    fn replay(&self, request: &Req) -> Req {
        request.clone()
    }
}

/// Whether a call sends its request again after an attempt's outcome, seeing the request: the
/// layer's request-aware decision, made by its [`Replay`] slot ([`Cloned`]: the classification's
/// answer as it is; with the feature `http`, [`HttpRequests`]: HTTP's safety rule and the hook of
/// [`RetryLayer::retry_request`]). Like tower's `Policy::retry`, it sees the request and the
/// outcome; the classification (`retry_if`, `retry_if_ok`) has answered first (`retryable`).
///
/// ```
/// use reattempt::tower::{Cloned, RetryRequest};
///
/// let outcome: Result<&u32, &std::io::Error> = Ok(&503);
/// // A plain layer does what its classification says.
/// assert!(Cloned.retry_request(&"request", outcome, true));
/// assert!(!Cloned.retry_request(&"request", outcome, false));
/// ```
pub trait RetryRequest<Req, T, E> {
    /// Whether to retry after `outcome`, which the classification calls `retryable` or not.
    fn retry_request(&self, request: &Req, outcome: Result<&T, &E>, retryable: bool) -> bool;

    /// Whether the slot judges for itself whether a request is safe to repeat (HTTP's safety
    /// rule): the classification asked before it then says only whether an outcome is transient
    /// (see [`Hooks::idempotent`](crate::Hooks::idempotent)). Default: no.
    #[inline]
    fn judges_safety(&self) -> bool {
        false
    }

    /// Whether `request` says it is safe to repeat after an attempt whose outcome is unknown
    /// (see [`Hooks::idempotent`](crate::Hooks::idempotent)). Default: it does not say (`None`);
    /// with the feature `http`, [`HttpRequests`] answers by the layer's
    /// [`idempotent`](RetryLayer::idempotent) if given, else by RFC 9110's method rule and the
    /// request's `Idempotency-Key`.
    #[inline]
    fn idempotent(&self, request: &Req) -> Option<bool> {
        let _ = request;
        None
    }

    /// Whether a hedge (a copy sent while an attempt is in flight) of `request` may start.
    /// Default: yes; with the feature `http`, [`HttpRequests`] says no for a request that may
    /// not be sent twice (HTTP's safety rule).
    #[inline]
    fn hedge_allowed(&self, request: &Req) -> bool {
        let _ = request;
        true
    }

    /// Whether the request itself rules out any further attempt, whatever the outcome (a body
    /// past its replay cap: the call is committed to the copy that sent it). `Some(reason)`:
    /// nothing more starts, and the copies in flight still answer (see
    /// [`Hooks::retry_refused`](crate::Hooks::retry_refused)). Default: `None`.
    #[inline]
    fn retry_refused(&self, request: &Req) -> Option<crate::GiveUpReason> {
        let _ = request;
        None
    }

    /// Whether `error` is the error of a copy of `request` left behind by the replay cap
    /// (another copy took the body past it): the client's own doing, not the dependency's
    /// outcome. Such an error is never shown to the classification: the call's copy holding
    /// the body answers for it (it is retried, and so refused by the cap), and it counts for
    /// neither the breaker nor the throttle. Default: no; with the feature `http`,
    /// [`HttpRequests`] says yes for a [`BodyNotReplayable`](crate::http::BodyNotReplayable)
    /// among the error's sources (an error seen through `tower::BoxError`, `std::io::Error`
    /// or `reqwest::Error`).
    ///
    /// ```
    /// use reattempt::tower::{Cloned, RetryRequest};
    ///
    /// let error = std::io::Error::other("reset");
    /// assert!(!RetryRequest::<_, (), _>::left_behind(&Cloned, &"request", &error));
    /// ```
    #[inline]
    fn left_behind(&self, request: &Req, error: &E) -> bool {
        let _ = (request, error);
        false
    }

    /// Called once with the call's final outcome and the number of attempts made (with the
    /// feature `http`, [`HttpRequests`] records it in a response's extensions). Default:
    /// nothing.
    #[inline]
    fn finish(&self, outcome: &mut Result<T, E>, attempts: u32) {
        let _ = (outcome, attempts);
    }
}

impl<Req, T, E> RetryRequest<Req, T, E> for Cloned {
    #[inline]
    fn retry_request(&self, _: &Req, _: Result<&T, &E>, retryable: bool) -> bool {
        retryable
    }
}

/// No circuit breaker, budget, throttle or bulkhead (the layer's defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoGuard;

/// A circuit breaker, a budget, a throttle or a bulkhead the layer's calls share: held by
/// anything that points at one (`Arc<CircuitBreaker>`, `&'static CircuitBreaker`…; a bulkhead
/// by an `Arc` or a `&'static`, which each call's slot keeps a clone of).
#[derive(Debug, Clone, Copy)]
pub struct Shared<P>(pub(crate) P);

/// The layer's budget slot: [`NoGuard`] or [`Shared`].
pub trait BudgetSlot {
    /// The budget, if any.
    fn budget(&self) -> Option<&RetryBudget>;
}

impl BudgetSlot for NoGuard {
    #[inline]
    fn budget(&self) -> Option<&RetryBudget> {
        None
    }
}

impl<P: Deref<Target = RetryBudget>> BudgetSlot for Shared<P> {
    #[inline]
    fn budget(&self) -> Option<&RetryBudget> {
        Some(&self.0)
    }
}

/// The layer's breaker slot: [`NoGuard`] or [`Shared`], whose rejection is the service's error
/// `E::from(BreakerOpen)`.
#[diagnostic::on_unimplemented(
    message = "a circuit breaker's rejection must become the service's error `{E}`, which has no conversion from `reattempt::BreakerOpen`",
    note = "say how with `.breaker_open_into(|open| …)` after `.circuit_breaker(..)`, or implement `From<reattempt::BreakerOpen>` for an error type of your own"
)]
pub trait BreakerFor<E>: KeepsOutcome {
    /// The breaker, if any.
    fn breaker(&self) -> Option<&CircuitBreaker>;
    /// The error of a rejected call.
    fn rejection(&self) -> E;
}

impl KeepsOutcome for NoGuard {
    type Kept<O> = NotKept;
}

impl<P> KeepsOutcome for Shared<P> {
    type Kept<O> = Option<O>;
}

impl<S, R, E> KeepsOutcome for Converted<S, R, E> {
    type Kept<O> = Option<O>;
}

impl<E> BreakerFor<E> for NoGuard {
    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        None
    }
    fn rejection(&self) -> E {
        unreachable!("reattempt: no breaker, no rejection")
    }
}

impl<E: FromBreakerOpen, P: Deref<Target = CircuitBreaker>> BreakerFor<E> for Shared<P> {
    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        Some(&self.0)
    }
    fn rejection(&self) -> E {
        E::from_breaker_open(BreakerOpen::new())
    }
}

/// The layer's throttle slot: [`NoGuard`] or [`Shared`], whose rejection is the service's
/// error `E::from(Throttled)`.
#[diagnostic::on_unimplemented(
    message = "an attempt the adaptive throttle sheds must become the service's error `{E}`, which has no conversion from `reattempt::Throttled`",
    note = "say how with `.throttled_into(|shed| …)` after `.throttle(..)`, or implement `From<reattempt::Throttled>` for an error type of your own"
)]
pub trait ThrottleFor<E>: KeepsOutcome {
    /// The throttle, if any.
    fn throttle(&self) -> Option<&AdaptiveThrottle>;
    /// The error of a shed attempt.
    fn shed(&self) -> E;
}

impl<E> ThrottleFor<E> for NoGuard {
    #[inline]
    fn throttle(&self) -> Option<&AdaptiveThrottle> {
        None
    }
    fn shed(&self) -> E {
        unreachable!("reattempt: no throttle, no rejection")
    }
}

impl<E: FromThrottled, P: Deref<Target = AdaptiveThrottle>> ThrottleFor<E> for Shared<P> {
    #[inline]
    fn throttle(&self) -> Option<&AdaptiveThrottle> {
        Some(&self.0)
    }
    fn shed(&self) -> E {
        E::from_throttled(Throttled::new())
    }
}

/// The layer's bulkhead slot: [`NoGuard`] or [`Shared`] (an `Arc<Bulkhead>`, a
/// `&'static Bulkhead`), where each call takes its slot.
pub trait BulkheadSlot {
    /// Where a call's slot is taken from.
    type Slots: SlotSource<'static>;
    /// The bulkhead's slots, if any.
    fn slots(&self) -> Option<Self::Slots>;
}

/// A call's slot of the layer's bulkhead `L`.
type SlotOf<L> = CallSlot<'static, <<L as BulkheadSlot>::Slots as SlotSource<'static>>::Permit>;

impl BulkheadSlot for NoGuard {
    type Slots = OwnedSlots<&'static Bulkhead>;
    #[inline]
    fn slots(&self) -> Option<Self::Slots> {
        None
    }
}

impl<P> BulkheadSlot for Shared<P>
where
    P: Deref<Target = Bulkhead> + Clone + Send + Sync + 'static,
{
    type Slots = OwnedSlots<P>;
    #[inline]
    fn slots(&self) -> Option<Self::Slots> {
        Some(OwnedSlots(self.0.clone()))
    }
}

/// The layer's bulkhead slot, whose rejection is the service's error `E::from(BulkheadFull)`.
#[diagnostic::on_unimplemented(
    message = "a call the full bulkhead turns away must become the service's error `{E}`, which has no conversion from `reattempt::BulkheadFull` (or the bulkhead is not held by an `Arc` or a `&'static`)",
    note = "say how with `.bulkhead_full_into(|full| …)` after `.bulkhead(..)`, or implement `From<reattempt::BulkheadFull>` for an error type of your own"
)]
pub trait BulkheadFor<E>: BulkheadSlot {
    /// The error of a call turned away.
    fn full(&self) -> E;
}

impl<E> BulkheadFor<E> for NoGuard {
    fn full(&self) -> E {
        unreachable!("reattempt: no bulkhead, no rejection")
    }
}

impl<E: FromBulkheadFull, P> BulkheadFor<E> for Shared<P>
where
    P: Deref<Target = Bulkhead> + Clone + Send + Sync + 'static,
{
    fn full(&self) -> E {
        E::from_bulkhead_full(BulkheadFull::new())
    }
}

// A guard that may or may not be set when the layer is built (the gRPC layer's guards, set by
// its own builder): `None` is `NoGuard`, `Some(slot)` is the slot.

impl<S> KeepsOutcome for Option<S> {
    type Kept<O> = Option<O>;
}

impl<S: BudgetSlot> BudgetSlot for Option<S> {
    #[inline]
    fn budget(&self) -> Option<&RetryBudget> {
        self.as_ref().and_then(BudgetSlot::budget)
    }
}

impl<E, S: BreakerFor<E>> BreakerFor<E> for Option<S> {
    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        self.as_ref().and_then(BreakerFor::breaker)
    }
    fn rejection(&self) -> E {
        match self {
            Some(slot) => slot.rejection(),
            None => unreachable!("reattempt: no breaker, no rejection"),
        }
    }
}

impl<E, S: ThrottleFor<E>> ThrottleFor<E> for Option<S> {
    #[inline]
    fn throttle(&self) -> Option<&AdaptiveThrottle> {
        self.as_ref().and_then(ThrottleFor::throttle)
    }
    fn shed(&self) -> E {
        match self {
            Some(slot) => slot.shed(),
            None => unreachable!("reattempt: no throttle, no rejection"),
        }
    }
}

impl<S: BulkheadSlot> BulkheadSlot for Option<S> {
    type Slots = S::Slots;
    #[inline]
    fn slots(&self) -> Option<Self::Slots> {
        self.as_ref().and_then(BulkheadSlot::slots)
    }
}

impl<E, S: BulkheadFor<E>> BulkheadFor<E> for Option<S> {
    fn full(&self) -> E {
        match self {
            Some(slot) => slot.full(),
            None => unreachable!("reattempt: no bulkhead, no rejection"),
        }
    }
}

/// A guard slot ([`Shared`]) whose rejection `R` becomes the service's error `E` by a given
/// conversion, rather than by `E`'s own ([`FromBreakerOpen`] and its siblings): what
/// [`RetryLayer::breaker_open_into`], [`throttled_into`](RetryLayer::throttled_into) and
/// [`bulkhead_full_into`](RetryLayer::bulkhead_full_into) make of the guard set before them.
#[derive(Debug)]
pub struct Converted<S, R, E> {
    slot: S,
    into: fn(R) -> E,
}

impl<S: Clone, R, E> Clone for Converted<S, R, E> {
    fn clone(&self) -> Self {
        Converted {
            slot: self.slot.clone(),
            into: self.into,
        }
    }
}

impl<E, P: Deref<Target = CircuitBreaker>> BreakerFor<E> for Converted<Shared<P>, BreakerOpen, E> {
    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        Some(&self.slot.0)
    }
    fn rejection(&self) -> E {
        (self.into)(BreakerOpen::new())
    }
}

impl<E, P: Deref<Target = AdaptiveThrottle>> ThrottleFor<E> for Converted<Shared<P>, Throttled, E> {
    #[inline]
    fn throttle(&self) -> Option<&AdaptiveThrottle> {
        Some(&self.slot.0)
    }
    fn shed(&self) -> E {
        (self.into)(Throttled::new())
    }
}

impl<E, P> BulkheadSlot for Converted<Shared<P>, BulkheadFull, E>
where
    P: Deref<Target = Bulkhead> + Clone + Send + Sync + 'static,
{
    type Slots = OwnedSlots<P>;
    #[inline]
    fn slots(&self) -> Option<Self::Slots> {
        self.slot.slots()
    }
}

impl<E, P> BulkheadFor<E> for Converted<Shared<P>, BulkheadFull, E>
where
    P: Deref<Target = Bulkhead> + Clone + Send + Sync + 'static,
{
    fn full(&self) -> E {
        (self.into)(BulkheadFull::new())
    }
}

/// The layer's hooks, one slot per hook, each [`Unset`] (the attribute's default) until given:
/// what [`RetryLayer::retry_if`] and its siblings fill. Unlike [`FnHooks`](crate::FnHooks) it
/// names no outcome type: the closures' argument types say it (`|e: &io::Error| …`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Classify<
    RetryIf = Unset,
    RetryIfOk = Unset,
    RetryAfter = Unset,
    RetryAfterOk = Unset,
    OnRetry = Unset,
    TimeoutIf = Unset,
> {
    retry_if: RetryIf,
    retry_if_ok: RetryIfOk,
    retry_after: RetryAfter,
    retry_after_ok: RetryAfterOk,
    on_retry: OnRetry,
    timeout_if: TimeoutIf,
}

impl<T, E, A, B, C, D, N, F> Hooks<T, E> for Classify<A, B, C, D, N, F>
where
    A: ErrorHook<E, bool>,
    B: OkHook<T>,
    C: DelayHook<E>,
    D: DelayHook<T>,
    N: OnRetryHook<E>,
    F: ClassHook<E>,
{
    #[inline]
    fn retry_if(&mut self, error: &E) -> bool {
        // Unset: every error, by the crate's judgement (see `Hooks::retry_if`).
        self.retry_if
            .call(error)
            .unwrap_or_else(|| crate::may_repeat(crate::Effect::Unstated))
    }

    #[inline]
    fn retry_if_ok(&mut self, value: &T) -> bool {
        self.retry_if_ok.call(value).unwrap_or(false)
    }

    #[inline]
    fn retries_ok(&self) -> bool {
        B::SET
    }

    #[inline]
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        self.retry_after.hint(error)
    }

    #[inline]
    fn delay_for(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        self.retry_after.choose(error, attempt, computed)
    }

    #[inline]
    fn retry_after_ok(&mut self, value: &T) -> Option<Duration> {
        self.retry_after_ok.hint(value)
    }

    #[inline]
    fn delay_for_ok(&mut self, value: &T, attempt: u32, computed: Duration) -> Option<Duration> {
        self.retry_after_ok.choose(value, attempt, computed)
    }

    #[inline]
    fn ok_failed(&mut self, value: &T) -> bool {
        self.retry_if_ok.failed(value)
    }

    #[inline]
    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        self.on_retry.call(error, context, delay);
    }

    #[inline]
    fn is_timeout(&mut self, error: &E) -> bool {
        self.class(error) == ErrorClass::Timeout
    }

    #[inline]
    fn class(&mut self, error: &E) -> ErrorClass {
        self.timeout_if
            .class(error)
            .unwrap_or_else(crate::engine::hooks::judged_class)
    }

    #[inline]
    fn class_ok(&mut self, value: &T) -> ErrorClass {
        self.retry_if_ok
            .class(value)
            .unwrap_or_else(crate::engine::hooks::judged_class)
    }
}

/// What every call of a layer shares.
#[derive(Debug, Clone)]
struct Settings<R, B, G, Q, L> {
    policy: RetryPolicy,
    name: &'static str,
    replay: R,
    breaker: B,
    budget: G,
    throttle: Q,
    bulkhead: L,
}

/// A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) that retries the service it wraps under a [`RetryPolicy`]; see the
/// [module](self) for how a call runs.
///
/// Settings carry the attribute's names: [`retry_if`](Self::retry_if) (default: every error),
/// [`retry_if_ok`](Self::retry_if_ok) (retry some responses, e.g. a 503), [`retry_after`](Self::retry_after)
/// and [`retry_after_ok`](Self::retry_after_ok) (a server's hint, as a floor under the delay),
/// [`on_retry`](Self::on_retry), [`timeout_if`](Self::timeout_if), [`circuit_breaker`](Self::circuit_breaker),
/// [`budget`](Self::budget), [`throttle`](Self::throttle), [`bulkhead`](Self::bulkhead),
/// [`name`](Self::name); the policy's `timeout`, `max_elapsed` and `hedge_after`.
/// With the feature `http`, [`http`](Self::http) is a ready HTTP classification.
///
/// The policy's per-attempt `timeout` turns a slow attempt into `E::from(Elapsed)`, so by
/// default the service's error needs `From<Elapsed>` (a `tower::BoxError` has it); otherwise say
/// [`timeout_into`](Self::timeout_into) or [`without_timeout`](Self::without_timeout), as with
/// the closure API.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy};
/// use reattempt::tower::RetryLayer;
///
/// let policy = RetryPolicy::builder()
///     .max_attempts(4)
///     .timeout(Duration::from_secs(2))
///     .max_elapsed(Duration::from_secs(10))
///     .build()
///     .unwrap();
/// let breaker = Arc::new(CircuitBreaker::builder().build().unwrap());
/// let layer = RetryLayer::new(policy)
///     .retry_if(|e: &std::io::Error| e.kind() != std::io::ErrorKind::PermissionDenied)
///     .circuit_breaker(breaker.clone())
///     .budget(Arc::new(RetryBudget::builder().build().unwrap()))
///     .name("inventory");
/// # let _ = layer;
/// ```
#[derive(Debug)]
pub struct RetryLayer<
    H = Classify,
    C = ElapsedInto,
    R = Cloned,
    B = NoGuard,
    G = NoGuard,
    Q = NoGuard,
    L = NoGuard,
> {
    settings: Arc<Settings<R, B, G, Q, L>>,
    hooks: H,
    timeout: C,
}

impl<H: Clone, C: Clone, R, B, G, Q, L> Clone for RetryLayer<H, C, R, B, G, Q, L> {
    fn clone(&self) -> Self {
        RetryLayer {
            settings: Arc::clone(&self.settings),
            hooks: self.hooks.clone(),
            timeout: self.timeout.clone(),
        }
    }
}

impl RetryLayer {
    /// A layer retrying under `policy`, with the attribute's defaults: every error is retried, no
    /// response is, no hint, no breaker, no budget, the name `"retry"`.
    pub fn new(policy: RetryPolicy) -> Self {
        RetryLayer {
            settings: Arc::new(Settings {
                policy,
                name: "retry",
                replay: Cloned,
                breaker: NoGuard,
                budget: NoGuard,
                throttle: NoGuard,
                bulkhead: NoGuard,
            }),
            hooks: Classify::default(),
            timeout: ElapsedInto,
        }
    }
}

#[allow(clippy::type_complexity, reason = "the layer's type names each slot")]
impl<H, C, R: Clone, P: Clone, G: Clone, Q: Clone, L: Clone>
    RetryLayer<H, C, R, Shared<P>, G, Q, L>
{
    /// Makes the service's error for a call the breaker rejects with `f`: for an error type
    /// without a [`FromBreakerOpen`] conversion (another crate's), or to choose another value.
    /// Called after [`circuit_breaker`](RetryLayer::circuit_breaker), whose guard it converts
    /// (the attribute's and the closure API's key of the same name).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{CircuitBreaker, RetryPolicy};
    /// use reattempt::tower::RetryLayer;
    ///
    /// let breaker = Arc::new(CircuitBreaker::builder().build().unwrap());
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
    ///     .circuit_breaker(breaker)
    ///     .breaker_open_into(|_open| 503_u16);
    /// # let _ = layer;
    /// ```
    pub fn breaker_open_into<E>(
        self,
        f: fn(BreakerOpen) -> E,
    ) -> RetryLayer<H, C, R, Converted<Shared<P>, BreakerOpen, E>, G, Q, L> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: Converted {
                slot: s.breaker,
                into: f,
            },
            budget: s.budget,
            throttle: s.throttle,
            bulkhead: s.bulkhead,
        })
    }
}

#[allow(clippy::type_complexity, reason = "the layer's type names each slot")]
impl<H, C, R: Clone, B: Clone, G: Clone, P: Clone, L: Clone>
    RetryLayer<H, C, R, B, G, Shared<P>, L>
{
    /// Makes the service's error for an attempt the throttle sheds with `f`, as
    /// [`breaker_open_into`](RetryLayer::breaker_open_into) does for the breaker. Called after
    /// [`throttle`](RetryLayer::throttle).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{AdaptiveThrottle, RetryPolicy};
    /// use reattempt::tower::RetryLayer;
    ///
    /// let throttle = Arc::new(AdaptiveThrottle::builder().build().unwrap());
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
    ///     .throttle(throttle)
    ///     .throttled_into(|_shed| 429_u16);
    /// # let _ = layer;
    /// ```
    pub fn throttled_into<E>(
        self,
        f: fn(Throttled) -> E,
    ) -> RetryLayer<H, C, R, B, G, Converted<Shared<P>, Throttled, E>, L> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: s.breaker,
            budget: s.budget,
            throttle: Converted {
                slot: s.throttle,
                into: f,
            },
            bulkhead: s.bulkhead,
        })
    }
}

#[allow(clippy::type_complexity, reason = "the layer's type names each slot")]
impl<H, C, R: Clone, B: Clone, G: Clone, Q: Clone, P: Clone>
    RetryLayer<H, C, R, B, G, Q, Shared<P>>
{
    /// Makes the service's error for a call the full bulkhead turns away with `f`, as
    /// [`breaker_open_into`](RetryLayer::breaker_open_into) does for the breaker. Called after
    /// [`bulkhead`](RetryLayer::bulkhead).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{Bulkhead, RetryPolicy};
    /// use reattempt::tower::RetryLayer;
    ///
    /// let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(10).build().unwrap());
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
    ///     .bulkhead(bulkhead)
    ///     .bulkhead_full_into(|_full| 503_u16);
    /// # let _ = layer;
    /// ```
    pub fn bulkhead_full_into<E>(
        self,
        f: fn(BulkheadFull) -> E,
    ) -> RetryLayer<H, C, R, B, G, Q, Converted<Shared<P>, BulkheadFull, E>> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: s.breaker,
            budget: s.budget,
            throttle: s.throttle,
            bulkhead: Converted {
                slot: s.bulkhead,
                into: f,
            },
        })
    }
}

impl<H, C, R: Clone, B: Clone, G: Clone, Q: Clone, L: Clone> RetryLayer<H, C, R, B, G, Q, L> {
    /// The policy the layer's calls follow.
    pub fn policy(&self) -> &RetryPolicy {
        &self.settings.policy
    }

    /// Says whether the layer's calls are safe to repeat after an attempt whose outcome is
    /// unknown (a reset after the request was written, a timeout after sending: see
    /// [`Effect`](crate::Effect)), over its policy's
    /// [`idempotent`](crate::RetryPolicyBuilder::idempotent). Not said, a plain layer's call is
    /// not idempotent, and with [`http`](RetryLayer::http) RFC 9110's
    /// method rule decides (a `GET` is, a `POST` is with an `Idempotency-Key`). The crate's own
    /// judgement ([`transient`](crate::transient), no `retry_if`, the policy's `timeout`, the
    /// HTTP classification) repeats an unknown outcome only on an idempotent call, and a hedge
    /// starts only for one.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap()).idempotent(true);
    /// assert_eq!(layer.policy().idempotent(), Some(true));
    /// ```
    #[must_use]
    pub fn idempotent(self, idempotent: bool) -> Self
    where
        R: SaysIdempotent,
    {
        self.map_settings(|mut s| {
            s.policy.idempotent = Some(idempotent);
            s.replay = s.replay.said_idempotent(idempotent);
            s
        })
    }

    /// Rebuilds the shared settings with one changed (a layer already cloned keeps its own).
    fn map_settings<R2, B2, G2, Q2, L2>(
        self,
        f: impl FnOnce(Settings<R, B, G, Q, L>) -> Settings<R2, B2, G2, Q2, L2>,
    ) -> RetryLayer<H, C, R2, B2, G2, Q2, L2> {
        let settings = Arc::unwrap_or_clone(self.settings);
        RetryLayer {
            settings: Arc::new(f(settings)),
            hooks: self.hooks,
            timeout: self.timeout,
        }
    }

    /// The layer with these guard slots in place of its own (for a driver that builds the layer
    /// from guards it may or may not have: `Option<Shared<_>>`).
    #[cfg(feature = "tonic")]
    pub(crate) fn with_guard_slots<B2, G2, Q2, L2>(
        self,
        breaker: B2,
        budget: G2,
        throttle: Q2,
        bulkhead: L2,
    ) -> RetryLayer<H, C, R, B2, G2, Q2, L2> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker,
            budget,
            throttle,
            bulkhead,
        })
    }

    /// Labels the calls in events (default `"retry"`).
    #[must_use]
    pub fn name(self, name: &'static str) -> Self {
        self.map_settings(|s| Settings { name, ..s })
    }

    /// Passes every attempt through `breaker` (an `Arc<CircuitBreaker>`, a `&'static` one…):
    /// while it is open, a call ends at once with `E::from(BreakerOpen)`, never retried.
    pub fn circuit_breaker<P: Deref<Target = CircuitBreaker>>(
        self,
        breaker: P,
    ) -> RetryLayer<H, C, R, Shared<P>, G, Q, L> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: Shared(breaker),
            budget: s.budget,
            throttle: s.throttle,
            bulkhead: s.bulkhead,
        })
    }

    /// Pays each retry from `budget` (an `Arc<RetryBudget>`, a `&'static` one…), and each
    /// success back into it: when it cannot pay, the call ends with its last outcome.
    pub fn budget<P: Deref<Target = RetryBudget>>(
        self,
        budget: P,
    ) -> RetryLayer<H, C, R, B, Shared<P>, Q, L> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: s.breaker,
            budget: Shared(budget),
            throttle: s.throttle,
            bulkhead: s.bulkhead,
        })
    }

    /// Passes every attempt (retries included) through the client-side adaptive `throttle` (an
    /// `Arc<AdaptiveThrottle>`, a `&'static` one…), after the breaker if any: an attempt it
    /// sheds is not sent, and the call ends at once with `E::from(Throttled)`, never retried.
    /// The throttle hears whether the service accepted each attempt it let through.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{AdaptiveThrottle, RetryPolicy};
    /// use reattempt::tower::RetryLayer;
    ///
    /// let throttle = Arc::new(AdaptiveThrottle::builder().build().unwrap());
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap()).throttle(throttle);
    /// # let _ = layer;
    /// ```
    pub fn throttle<P: Deref<Target = AdaptiveThrottle>>(
        self,
        throttle: P,
    ) -> RetryLayer<H, C, R, B, G, Shared<P>, L> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: s.breaker,
            budget: s.budget,
            throttle: Shared(throttle),
            bulkhead: s.bulkhead,
        })
    }

    /// Holds a slot of `bulkhead` (an `Arc<Bulkhead>`, a `&'static` one) for each call, from
    /// before its first attempt to its end, its sleeps included. When every slot is taken (for
    /// the bulkhead's `max_wait`, if it has one) nothing is sent and the call ends at once with
    /// `E::from(BulkheadFull)`, never retried.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{Bulkhead, RetryPolicy};
    /// use reattempt::tower::RetryLayer;
    ///
    /// let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(10).build().unwrap());
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap()).bulkhead(bulkhead);
    /// # let _ = layer;
    /// ```
    pub fn bulkhead<P>(self, bulkhead: P) -> RetryLayer<H, C, R, B, G, Q, Shared<P>>
    where
        P: Deref<Target = Bulkhead> + Clone + Send + Sync + 'static,
    {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay: s.replay,
            breaker: s.breaker,
            budget: s.budget,
            throttle: s.throttle,
            bulkhead: Shared(bulkhead),
        })
    }

    /// Copies each attempt's request with `replay` (see [`Replay`]).
    pub fn replay<R2>(self, replay: R2) -> RetryLayer<H, C, R2, B, G, Q, L> {
        self.map_settings(|s| Settings {
            policy: s.policy,
            name: s.name,
            replay,
            breaker: s.breaker,
            budget: s.budget,
            throttle: s.throttle,
            bulkhead: s.bulkhead,
        })
    }

    /// All the hooks at once, as one [`Hooks`] value (a classification shared by many layers),
    /// in place of `retry_if`, `retry_if_ok`, `retry_after`, `on_retry` and `timeout_if`. Each
    /// call works on its own clone of it.
    pub fn hooks<H2>(self, hooks: H2) -> RetryLayer<H2, C, R, B, G, Q, L> {
        RetryLayer {
            settings: self.settings,
            hooks,
            timeout: self.timeout,
        }
    }

    /// Makes the error of an attempt the policy's `timeout` cut with `f`, for an error type
    /// without `From<Elapsed>`.
    pub fn timeout_into<F: FnMut(Elapsed) -> E + Clone, E>(
        self,
        f: F,
    ) -> RetryLayer<H, F, R, B, G, Q, L> {
        RetryLayer {
            settings: self.settings,
            hooks: self.hooks,
            timeout: f,
        }
    }

    /// Runs the attempts without a per-attempt time limit, even if the policy sets `timeout`
    /// (for an error type that cannot hold a timeout); `max_elapsed` still bounds the sleeps.
    pub fn without_timeout(self) -> RetryLayer<H, NoTimeout, R, B, G, Q, L> {
        RetryLayer {
            settings: self.settings,
            hooks: self.hooks,
            timeout: NoTimeout,
        }
    }
}

// Each hook method changes one slot of the hooks' type.
#[allow(clippy::type_complexity, reason = "one type parameter per hook")]
impl<RI, RO, RA, RAO, OR, TI, C, R, B, G, Q, L>
    RetryLayer<Classify<RI, RO, RA, RAO, OR, TI>, C, R, B, G, Q, L>
{
    fn map_hooks<RI2, RO2, RA2, RAO2, OR2, TI2>(
        self,
        f: impl FnOnce(Classify<RI, RO, RA, RAO, OR, TI>) -> Classify<RI2, RO2, RA2, RAO2, OR2, TI2>,
    ) -> RetryLayer<Classify<RI2, RO2, RA2, RAO2, OR2, TI2>, C, R, B, G, Q, L> {
        RetryLayer {
            settings: self.settings,
            hooks: f(self.hooks),
            timeout: self.timeout,
        }
    }

    /// Retries only the errors for which `predicate` is `true` (default: every error).
    pub fn retry_if<E, P: FnMut(&E) -> bool + Clone>(
        self,
        predicate: P,
    ) -> RetryLayer<Classify<P, RO, RA, RAO, OR, TI>, C, R, B, G, Q, L> {
        self.map_hooks(|h| Classify {
            retry_if: predicate,
            retry_if_ok: h.retry_if_ok,
            retry_after: h.retry_after,
            retry_after_ok: h.retry_after_ok,
            on_retry: h.on_retry,
            timeout_if: h.timeout_if,
        })
    }

    /// Retries the responses for which `predicate` is `true` (default: none): a 503 that came
    /// back as `Ok`. When no retry is left, the last response is returned.
    pub fn retry_if_ok<T, P: FnMut(&T) -> bool + Clone>(
        self,
        predicate: P,
    ) -> RetryLayer<Classify<RI, P, RA, RAO, OR, TI>, C, R, B, G, Q, L> {
        self.map_hooks(|h| Classify {
            retry_if: h.retry_if,
            retry_if_ok: predicate,
            retry_after: h.retry_after,
            retry_after_ok: h.retry_after_ok,
            on_retry: h.on_retry,
            timeout_if: h.timeout_if,
        })
    }

    /// Honours the delay an error asks for (gRPC pushback) as a floor under the schedule's
    /// delay; a hint beyond `max_delay` or the remaining `max_elapsed` ends the call.
    pub fn retry_after<E, F: FnMut(&E) -> Option<Duration> + Clone>(
        self,
        hint: F,
    ) -> RetryLayer<Classify<RI, RO, DelayFor<F, RA::Choose>, RAO, OR, TI>, C, R, B, G, Q, L>
    where
        RA: DelaySlot,
    {
        self.map_error_delay(|slot| slot.with_hint(hint))
    }

    /// Chooses the delay before each retry after an error, from the error, the attempt that
    /// failed and the schedule's delay, as the closure API's
    /// [`delay_for`](crate::Retry::delay_for): `Some` replaces the schedule's delay (bounded by
    /// `max_delay`; `retry_after` is still a floor), `None` keeps it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(RetryPolicy::default())
    ///     .delay_for(|_: &std::io::Error, attempt, _| Some(Duration::from_millis(100) * attempt));
    /// # let _ = layer;
    /// ```
    pub fn delay_for<E, F: FnMut(&E, u32, Duration) -> Option<Duration> + Clone>(
        self,
        choose: F,
    ) -> RetryLayer<Classify<RI, RO, DelayFor<RA::Hint, F>, RAO, OR, TI>, C, R, B, G, Q, L>
    where
        RA: DelaySlot,
    {
        self.map_error_delay(|slot| slot.with_choice(choose))
    }

    /// As [`retry_after`](Self::retry_after), for a response that
    /// [`retry_if_ok`](Self::retry_if_ok) retries (a 429's `Retry-After`).
    pub fn retry_after_ok<T, F: FnMut(&T) -> Option<Duration> + Clone>(
        self,
        hint: F,
    ) -> RetryLayer<Classify<RI, RO, RA, DelayFor<F, RAO::Choose>, OR, TI>, C, R, B, G, Q, L>
    where
        RAO: DelaySlot,
    {
        self.map_ok_delay(|slot| slot.with_hint(hint))
    }

    /// As [`delay_for`](Self::delay_for), for a response that
    /// [`retry_if_ok`](Self::retry_if_ok) retries (a 503): the delay chosen from it, the attempt
    /// that failed and the schedule's delay; the response's hint is still a floor.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(RetryPolicy::default())
    ///     .http()
    ///     .delay_for_ok(|_: &http::Response<String>, attempt, _| Some(Duration::from_millis(100) * attempt));
    /// # let _ = layer;
    /// ```
    pub fn delay_for_ok<T, F: FnMut(&T, u32, Duration) -> Option<Duration> + Clone>(
        self,
        choose: F,
    ) -> RetryLayer<Classify<RI, RO, RA, DelayFor<RAO::Hint, F>, OR, TI>, C, R, B, G, Q, L>
    where
        RAO: DelaySlot,
    {
        self.map_ok_delay(|slot| slot.with_choice(choose))
    }

    /// Calls `f` before each retry's sleep, after an error, with the call's context and the
    /// sleep.
    pub fn on_retry<E, F: FnMut(&E, &RetryContext, Duration) + Clone>(
        self,
        f: F,
    ) -> RetryLayer<Classify<RI, RO, RA, RAO, F, TI>, C, R, B, G, Q, L> {
        self.map_hooks(|h| Classify {
            retry_if: h.retry_if,
            retry_if_ok: h.retry_if_ok,
            retry_after: h.retry_after,
            retry_after_ok: h.retry_after_ok,
            on_retry: f,
            timeout_if: h.timeout_if,
        })
    }

    /// Tells which errors report a timeout (a client's own read timeout): a retry after one
    /// costs the budget's `timeout_cost`, and the breaker counts it as a failure. The errors it
    /// does not name keep the class the retry predicate told (see [`error_class`](Self::error_class)).
    pub fn timeout_if<E, F: FnMut(&E) -> bool + Clone>(
        self,
        predicate: F,
    ) -> RetryLayer<Classify<RI, RO, RA, RAO, OR, TimeoutIf<F>>, C, R, B, G, Q, L> {
        self.class_slot(TimeoutIf(predicate))
    }

    /// Tells each error's class ([`ErrorClass`]), in place of [`timeout_if`](Self::timeout_if),
    /// as the closure API's `error_class`: a throttling error's retry grows from the policy's
    /// `throttling_delay` and costs the budget's `throttling_cost`. The class given here always
    /// wins. [`error_class`](crate::error_class) asks [`Transient::class`](crate::Transient::class).
    ///
    /// Not needed when the class is known without it: `.retry_if(reattempt::transient)` (or a
    /// predicate asking the crate's own `Transient` impls) tells the layer each judged error's
    /// class, and with [`http`](Self::http) a response's status tells its own (a 429 is
    /// throttling). Needed with no `retry_if` or a rule of your own on a type of your own: the
    /// layer puts no bound on the error type and cannot ask it. See
    /// [which drivers honour the class, and when](crate::Transient#which-drivers-honour-it-and-when).
    ///
    /// ```
    /// use reattempt::tower::RetryLayer;
    /// use reattempt::{RetryPolicy, error_class};
    ///
    /// let layer = RetryLayer::new(RetryPolicy::default()).error_class(error_class::<std::io::Error>);
    /// # let _ = layer;
    /// ```
    pub fn error_class<E, F: FnMut(&E) -> ErrorClass + Clone>(
        self,
        class: F,
    ) -> RetryLayer<Classify<RI, RO, RA, RAO, OR, ClassOf<F>>, C, R, B, G, Q, L> {
        self.class_slot(ClassOf(class))
    }

    /// The layer with its errors' delay slot (`retry_after`, `delay_for`) made anew.
    fn map_error_delay<S>(
        self,
        f: impl FnOnce(RA) -> S,
    ) -> RetryLayer<Classify<RI, RO, S, RAO, OR, TI>, C, R, B, G, Q, L> {
        self.map_hooks(|h| Classify {
            retry_if: h.retry_if,
            retry_if_ok: h.retry_if_ok,
            retry_after: f(h.retry_after),
            retry_after_ok: h.retry_after_ok,
            on_retry: h.on_retry,
            timeout_if: h.timeout_if,
        })
    }

    /// The layer with its responses' delay slot (`retry_after_ok`, `delay_for_ok`) made anew.
    fn map_ok_delay<S>(
        self,
        f: impl FnOnce(RAO) -> S,
    ) -> RetryLayer<Classify<RI, RO, RA, S, OR, TI>, C, R, B, G, Q, L> {
        self.map_hooks(|h| Classify {
            retry_if: h.retry_if,
            retry_if_ok: h.retry_if_ok,
            retry_after: h.retry_after,
            retry_after_ok: f(h.retry_after_ok),
            on_retry: h.on_retry,
            timeout_if: h.timeout_if,
        })
    }

    fn class_slot<F>(
        self,
        slot: F,
    ) -> RetryLayer<Classify<RI, RO, RA, RAO, OR, F>, C, R, B, G, Q, L> {
        self.map_hooks(|h| Classify {
            retry_if: h.retry_if,
            retry_if_ok: h.retry_if_ok,
            retry_after: h.retry_after,
            retry_after_ok: h.retry_after_ok,
            on_retry: h.on_retry,
            timeout_if: slot,
        })
    }
}

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
/// [`HttpRetryService<S>`](HttpRetryService) (feature `http`) the one of `.http()`, for a
/// struct's field.
///
/// When the service's error type `E` has no conversion from [`Elapsed`], the layer's service is
/// not a `Service`, and a call such as `svc.oneshot(request)` fails with rustc's "the method
/// `oneshot` exists for struct `RetryService<…>`, but its trait bounds were not satisfied"
/// (rustc cannot say which bound while the request type is still unknown; a function returning
/// `impl Service<Req>` gets the full message). The fix: `.timeout_into(|elapsed| …)` or
/// `.without_timeout()` on the layer, `impl From<reattempt::Elapsed>` for an error type of your
/// own, or `map_err(tower::BoxError::from)` below the layer.
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
        ResponseFuture {
            settings: Arc::clone(&self.settings),
            engine: Detached::new(),
            hooks: self.hooks.clone(),
            timeout: self.timeout.clone(),
            service,
            request,
            pending: None,
            ready: true,
            admitted: Admitted::NOT_ASKED,
            slot: CallSlot::Untaken,
            running: false,
            fault: FaultWait::default(),
            done: false,
            hedged: None,
            attempt: None,
            timer: None,
            kept_for_breaker: Default::default(),
            kept_for_throttle: Default::default(),
            kept_for_budget: Default::default(),
            lingering: false,
        }
    }
}

pin_project! {
    /// The future of a [`RetryService`] call. While an attempt runs, `timer` is its time limit
    /// (if any); between attempts it is the backoff sleep.
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<S, Req, H, C, R, B, G, Q, L>
    where
        S: Service<Req>,
        B: KeepsOutcome,
        G: KeepsOutcome,
        Q: KeepsOutcome,
        L: BulkheadSlot,
    {
        settings: Arc<Settings<R, B, G, Q, L>>,
        engine: Detached,
        hooks: H,
        timeout: C,
        service: S,
        // The caller's request, copied for each attempt.
        request: Req,
        // This attempt's copy, until the service is ready for it.
        pending: Option<Req>,
        // The service said it is ready and has not been called since (the caller's
        // `poll_ready` readied it for the first attempt).
        ready: bool,
        // What the guards said about the attempt in progress.
        admitted: Admitted,
        // The bulkhead's slot, held from before the first attempt to the end of the call.
        slot: SlotOf<L>,
        // An attempt is in progress (readying the service, or awaiting its response).
        running: bool,
        // A fault injected into the attempt begun (feature `testing`) whose wait `timer` is.
        fault: FaultWait,
        done: bool,
        // A hedged call's copies in flight (a policy with `hedge_after`); then `pending`,
        // `running` and `attempt` are unused and `timer` is the next start's (a hedge or a
        // retry).
        // With the flag its copies set when a `poll_ready` failed.
        hedged: Option<Box<(Hedged<CopyAttempt<S, Req>>, Arc<AtomicBool>)>>,
        #[pin]
        attempt: Option<S::Future>,
        #[pin]
        timer: Option<Sleep>,
        // The last attempt's outcome while a retry waits, when the breaker or the throttle may
        // turn that retry away (the call then ends with it: `steps::decide_keeping`); nothing
        // without them (see `drivers::kept`).
        kept_for_breaker: B::Kept<Result<S::Response, S::Error>>,
        kept_for_throttle: Q::Kept<Result<S::Response, S::Error>>,
        // With a budget, the outcome a long-polling call returns once `timer` fires
        // (`Engine::linger`), while `lingering`.
        kept_for_budget: G::Kept<Result<S::Response, S::Error>>,
        lingering: bool,
    }
}

/// What a (non-hedged) attempt begun waits for before it is made: a fault injected into it
/// (feature `testing`), whose latency the call's `timer` is while `then` is set. Nothing
/// without the feature.
#[derive(Debug, Default, Clone, Copy)]
struct FaultWait {
    #[cfg(feature = "testing")]
    then: Option<steps::AfterWait>,
}

#[cfg(feature = "testing")]
impl FaultWait {
    /// Draws the fault of the attempt just begun, with time limit `limit` (see `steps::Fault`):
    /// `None`, make it now; `Some(Ok(()))`, `timer` is set to the fault's wait; `Some(Err(e))`,
    /// it fails at once with `e`, unpolled (`can_fail`: the call has a timeout conversion).
    fn begin(
        &mut self,
        engine: &Engine<'_>,
        limit: Option<Duration>,
        can_fail: bool,
        timer: Pin<&mut Option<Sleep>>,
    ) -> Option<Result<(), Elapsed>> {
        let fault = steps::fault(engine)?;
        let now = tokio::time::Instant::now();
        let deadline = limit.and_then(|d| crate::engine::deadline::deadline_after(now, d));
        // The limit runs from now, the latency included (`RetryContext::remaining`).
        engine.note_attempt_deadline(deadline);
        match steps::plan_fault(engine, fault, deadline, can_fail) {
            steps::FaultPlan::Run => None,
            steps::FaultPlan::Fail(failed) => Some(Err(failed)),
            steps::FaultPlan::Wait { until, then } => {
                set_timer_at(timer, until);
                self.then = Some(then);
                Some(Ok(()))
            }
        }
    }

    /// Polls the wait of a fault injected into the attempt begun (`timer`): `Ready(None)`, none;
    /// `Ready(Some(Err(e)))`, the attempt fails with `e`, unpolled; `Ready(Some(Ok(())))`, it is
    /// to be made now, `timer` set to its limit (fixed when it began).
    fn poll_wait(
        &mut self,
        engine: &Engine<'_>,
        mut timer: Pin<&mut Option<Sleep>>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(), Elapsed>>> {
        let Some(then) = self.then else {
            return Poll::Ready(None);
        };
        if let Some(sleep) = timer.as_mut().as_pin_mut() {
            ready!(sleep.poll(cx));
        }
        self.then = None;
        if let Some(failed) = steps::after_fault_wait(engine, then) {
            return Poll::Ready(Some(Err(failed)));
        }
        match then {
            steps::AfterWait::Run(Some(deadline)) => set_timer_at(timer, deadline),
            _ => timer.set(None),
        }
        Poll::Ready(Some(Ok(())))
    }
}

/// One attempt: `poll_ready` on the service, then `call`, then its response. Made for each poll
/// of the attempt, so that the driver's one timed poll serves it.
struct AttemptPoll<'a, S: Service<Req>, Req> {
    service: &'a mut S,
    pending: &'a mut Option<Req>,
    ready: &'a mut bool,
    future: Pin<&'a mut Option<S::Future>>,
    /// Set when the service's `poll_ready` failed (see [`ReadyAware`]).
    failed: &'a AtomicBool,
}

impl<S: Service<Req>, Req> Future for AttemptPoll<'_, S, Req> {
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(request) = this.pending.take() {
            if !*this.ready {
                match this.service.poll_ready(cx) {
                    Poll::Pending => {
                        *this.pending = Some(request);
                        return Poll::Pending;
                    }
                    // The service has failed (tower's contract): it is not asked again.
                    Poll::Ready(Err(e)) => {
                        this.failed.store(true, Ordering::Relaxed);
                        return Poll::Ready(Err(e));
                    }
                    Poll::Ready(Ok(())) => {}
                }
            }
            // Ready is used up by the call: the next attempt asks again.
            *this.ready = false;
            this.future.set(Some(this.service.call(request)));
        }
        match this.future.as_mut().as_pin_mut() {
            Some(future) => future.poll(cx),
            None => unreachable!("reattempt: an attempt without a request or a response"),
        }
    }
}

/// The layer's hooks: the user's, except after a `poll_ready` error (`failed`). A service whose
/// `poll_ready` failed has failed for good (tower's contract: it must not be polled again), so
/// the call ends with that error, as tower's own `Retry` does: it is never retried, and counts
/// as a failure for the breaker (as a timeout does: the dependency did not answer).
///
/// It also asks the layer's [`RetryRequest`] (`rule`, its replay slot) about each outcome, with
/// the caller's `request`.
struct ReadyAware<'h, H, Req, R> {
    hooks: &'h mut H,
    failed: &'h AtomicBool,
    request: &'h Req,
    rule: &'h R,
    /// The classification's answer for the last error (`retry_if`), which `error_failed` reads
    /// rather than asking again: a classification may count what it sees (gRPC's throttle).
    classified: bool,
}

impl<H, Req, R> ReadyAware<'_, H, Req, R> {
    #[inline]
    fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether `error` is a copy's the replay cap left behind ([`RetryRequest::left_behind`]).
    #[inline]
    fn left_behind<T, E>(&self, error: &E) -> bool
    where
        R: RetryRequest<Req, T, E>,
    {
        self.rule.left_behind(self.request, error)
    }
}

impl<T, E, H: Hooks<T, E>, Req, R: RetryRequest<Req, T, E>> Hooks<T, E>
    for ReadyAware<'_, H, Req, R>
{
    #[inline]
    fn retry_if(&mut self, error: &E) -> bool {
        if self.failed() {
            return false;
        }
        if self.left_behind(error) {
            // The client's own doing: the copy holding the body answers (the cap refuses the
            // retry); the classification never sees it.
            self.classified = false;
            return true;
        }
        // HTTP's safety rule decides about repeating from the request (`retry_request`): the
        // classification says only whether the failure is transient.
        let retryable = if self.rule.judges_safety() {
            crate::classify::effect::classify_only(|| self.hooks.retry_if(error))
        } else {
            self.hooks.retry_if(error)
        };
        self.classified = retryable;
        self.rule.retry_request(self.request, Err(error), retryable)
    }

    /// A transient error that the request's rule kept from a retry (a `POST`'s reset) is still
    /// the dependency's failure. Asked after `retry_if` for the same error.
    #[inline]
    fn error_failed(&mut self, error: &E) -> bool {
        !self.failed()
            && !self.left_behind(error)
            && (self.classified || self.hooks.error_failed(error))
    }

    #[inline]
    fn hedge_allowed(&mut self) -> bool {
        self.hooks.hedge_allowed() && self.rule.hedge_allowed(self.request)
    }

    #[inline]
    fn idempotent(&mut self) -> Option<bool> {
        self.hooks
            .idempotent()
            .or_else(|| self.rule.idempotent(self.request))
    }

    #[inline]
    fn retry_refused(&mut self) -> Option<crate::GiveUpReason> {
        self.hooks
            .retry_refused()
            .or_else(|| self.rule.retry_refused(self.request))
    }

    #[inline]
    fn counts_as_failure(&mut self, error: &E) -> bool {
        !self.left_behind(error) && self.hooks.counts_as_failure(error)
    }

    #[inline]
    fn retry_if_ok(&mut self, value: &T) -> bool {
        // As `retry_if`: HTTP's safety rule decides about repeating a response from the request.
        let retryable = if self.rule.judges_safety() {
            crate::classify::effect::classify_only(|| self.hooks.retry_if_ok(value))
        } else {
            self.hooks.retry_if_ok(value)
        };
        self.rule.retry_request(self.request, Ok(value), retryable)
    }

    #[inline]
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        if self.left_behind(error) {
            return None;
        }
        self.hooks.retry_after(error)
    }

    #[inline]
    fn retry_after_ok(&mut self, value: &T) -> Option<Duration> {
        self.hooks.retry_after_ok(value)
    }

    #[inline]
    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        if !self.left_behind(error) {
            self.hooks.on_retry(error, context, delay);
        }
    }

    #[inline]
    fn is_timeout(&mut self, error: &E) -> bool {
        self.failed() || (!self.left_behind(error) && self.hooks.is_timeout(error))
    }

    #[inline]
    fn class(&mut self, error: &E) -> ErrorClass {
        if self.failed() {
            ErrorClass::Timeout
        } else if self.left_behind(error) {
            ErrorClass::default()
        } else {
            self.hooks.class(error)
        }
    }

    #[inline]
    fn class_ok(&mut self, value: &T) -> ErrorClass {
        self.hooks.class_ok(value)
    }

    #[inline]
    fn delay_for(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        if self.left_behind(error) {
            return None;
        }
        self.hooks.delay_for(error, attempt, computed)
    }

    #[inline]
    fn delay_for_ok(&mut self, value: &T, attempt: u32, computed: Duration) -> Option<Duration> {
        self.hooks.delay_for_ok(value, attempt, computed)
    }

    #[inline]
    fn ok_failed(&mut self, value: &T) -> bool {
        self.hooks.ok_failed(value)
    }
}

pin_project! {
    /// One copy of a hedged call: `poll_ready` on its own clone of the service (unless that
    /// clone is the one the caller readied), then `call`, then its response.
    struct CopyAttempt<S, Req>
    where
        S: Service<Req>,
    {
        service: S,
        pending: Option<Req>,
        ready: bool,
        // The call's flag: set when this copy's `poll_ready` failed.
        failed: Arc<AtomicBool>,
        #[pin]
        future: Option<S::Future>,
    }
}

impl<S: Service<Req>, Req> Future for CopyAttempt<S, Req> {
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let attempt = AttemptPoll {
            service: this.service,
            pending: this.pending,
            ready: this.ready,
            future: this.future,
            failed: this.failed,
        };
        std::pin::pin!(attempt).poll(cx)
    }
}

impl<S, Req, H, C, R, B, G, Q, L> Future for ResponseFuture<S, Req, H, C, R, B, G, Q, L>
where
    S: Service<Req> + Clone,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error>,
    C: TimeoutInto<S::Error>,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot + KeepsOutcome,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        assert!(!*this.done, "`ResponseFuture` polled after completion");
        let settings = &**this.settings;
        let mut engine = std::mem::take(this.engine).attach(&settings.policy);
        if this.hedged.is_none() && engine.attempt() == 0 && settings.policy.hedge_after().is_some()
        {
            *this.hedged = Some(Box::default());
        }
        let out = if let Some(hedged) = this.hedged.as_deref_mut() {
            drive_hedged(
                &mut engine,
                settings,
                this.hooks,
                this.timeout,
                this.service,
                this.request,
                this.ready,
                this.slot,
                hedged,
                kept::either(this.kept_for_breaker, this.kept_for_throttle),
                this.timer,
                cx,
            )
        } else {
            drive(
                &mut engine,
                settings,
                this.hooks,
                this.timeout,
                this.service,
                this.request,
                this.pending,
                this.ready,
                this.admitted,
                this.slot,
                this.running,
                this.fault,
                this.attempt,
                this.timer,
                kept::either(this.kept_for_breaker, this.kept_for_throttle),
                Linger {
                    kept: kept::Keep::slot(this.kept_for_budget),
                    on: this.lingering,
                },
                cx,
            )
        };
        *this.engine = engine.detach();
        if out.is_ready() {
            *this.done = true;
        }
        out
    }
}

/// The driver's loop (the engine's steps, in order: admit, begin, poll, decide, sleep), over the
/// projected fields of a [`ResponseFuture`].
#[allow(
    clippy::too_many_arguments,
    clippy::too_many_lines,
    reason = "the projected fields of the future; the engine's steps, in order, in one loop"
)]
#[inline]
fn drive<S, Req, H, C, R, B, G, Q, L>(
    engine: &mut Engine<'_>,
    settings: &Settings<R, B, G, Q, L>,
    hooks: &mut H,
    timeout: &mut C,
    service: &mut S,
    request: &Req,
    pending: &mut Option<Req>,
    ready: &mut bool,
    admitted: &mut Admitted,
    slot: &mut SlotOf<L>,
    running: &mut bool,
    #[cfg_attr(not(feature = "testing"), allow(unused_variables))] fault: &mut FaultWait,
    mut attempt: Pin<&mut Option<S::Future>>,
    mut timer: Pin<&mut Option<Sleep>>,
    mut last: Option<&mut Option<Result<S::Response, S::Error>>>,
    mut linger: Linger<'_, Result<S::Response, S::Error>>,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, S::Error>>
where
    S: Service<Req>,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error>,
    C: TimeoutInto<S::Error>,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot + KeepsOutcome,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    // An attempt that fault injection failed, not made (feature `testing`).
    let mut injected_failure: Option<Elapsed> = None;
    loop {
        if let Some(out) = ready!(linger.poll(timer.as_mut(), cx)) {
            *slot = CallSlot::Untaken;
            return Poll::Ready(out);
        }
        // Set (by the attempt that ends in this poll) when `poll_ready` failed.
        let failed = AtomicBool::new(false);
        let outcome = if let Some(failed) = injected_failure.take() {
            // An attempt that fault injection failed (feature `testing`): not made.
            Err(timeout.timed_out(failed))
        } else if *running {
            let limit = timer.as_mut().as_pin_mut();
            let attempt_poll = AttemptPoll {
                service: &mut *service,
                pending: &mut *pending,
                ready: &mut *ready,
                future: attempt.as_mut(),
                failed: &failed,
            };
            let polled = poll_copy(engine, 0, std::pin::pin!(attempt_poll), limit, cx);
            let outcome = match ready!(polled) {
                Some(outcome) => outcome,
                None => Err(timeout.timed_out(Elapsed::new())),
            };
            attempt.set(None);
            *pending = None;
            *running = false;
            outcome
        } else {
            // An injected fault's wait (feature `testing`): then fail unpolled, or make it.
            #[cfg(feature = "testing")]
            if let Some(waited) = ready!(fault.poll_wait(engine, timer.as_mut(), cx)) {
                injected_failure = waited.err();
                if injected_failure.is_none() {
                    *pending = enter(engine, || Some(settings.replay.replay(request)));
                    *running = true;
                }
                continue;
            }
            if engine.attempt() > 0
                && let Some(sleep) = timer.as_mut().as_pin_mut()
            {
                // Between attempts: the timer is the backoff sleep.
                ready!(sleep.poll(cx));
            }
            // Ask the guards (`steps::admit`): the bulkhead's slot first, for the whole call
            // (a wait for one is polled here), then the breaker and the throttle.
            let full = match settings.bulkhead.slots() {
                Some(slots) => ready!(steps::poll_slot(slots, slot, engine, C::APPLIES, cx)),
                None => false,
            };
            let (breaker, throttle) = (settings.breaker.breaker(), settings.throttle.throttle());
            *admitted = steps::admit(engine, breaker, throttle, full, C::APPLIES);
            if let Some(reason) = admitted.rejection() {
                // Turned away: no attempt is made; `decide` ends the call.
                Err(rejection(settings, reason))
            } else {
                match steps::begin(engine, C::APPLIES) {
                    Start::NotMade => Err(timeout.timed_out(Elapsed::new())),
                    Start::Run(limit) => {
                        // Fault injection (feature `testing`): a latency to wait, or a failure.
                        #[cfg(feature = "testing")]
                        match fault.begin(engine, limit, C::APPLIES, timer.as_mut()) {
                            Some(Err(failed)) => {
                                injected_failure = Some(failed);
                                continue;
                            }
                            Some(Ok(())) => continue,
                            None => {}
                        }
                        *pending = enter(engine, || Some(settings.replay.replay(request)));
                        *running = true;
                        arm_attempt_limit(engine, timer.as_mut(), limit);
                        continue;
                    }
                }
            }
        };
        let (breaker, throttle) = (settings.breaker.breaker(), settings.throttle.throttle());
        let mut guards = Guards::NONE.admitted(breaker, throttle, *admitted);
        if let Some(budget) = settings.budget.budget() {
            guards = guards.budget(budget);
        }
        let mut hooks = ReadyAware {
            hooks: &mut *hooks,
            failed: &failed,
            request,
            rule: &settings.replay,
            classified: false,
        };
        let decision = steps::decide_kept(
            engine,
            settings.name,
            &mut hooks,
            outcome,
            guards,
            last.as_deref_mut(),
        );
        match decision {
            Decision::Stop(mut outcome) => {
                settings.replay.finish(&mut outcome, engine.attempt());
                // Unless it waits first (long polling), the call is over: its bulkhead slot
                // is free for another.
                if let Err(outcome) = linger.hold(engine, outcome, timer.as_mut()) {
                    timer.set(None);
                    *slot = CallSlot::Untaken;
                    return Poll::Ready(outcome);
                }
            }
            Decision::Retry(delay) => set_timer(timer.as_mut(), delay),
        }
    }
}

/// A long-polling call's wait before it returns ([`Engine::linger`]): where its outcome is kept
/// meanwhile (a call with a budget keeps one), and whether it is waiting.
struct Linger<'a, O> {
    kept: Option<&'a mut Option<O>>,
    on: &'a mut bool,
}

impl<O> Linger<'_, O> {
    /// Keeps `outcome` until the engine's wait is over (`timer` set for it), or gives it back
    /// when the call returns at once.
    fn hold(
        &mut self,
        engine: &Engine<'_>,
        outcome: O,
        timer: Pin<&mut Option<Sleep>>,
    ) -> Result<(), O> {
        match (engine.linger(), self.kept.as_deref_mut()) {
            (Some(until), Some(kept)) => {
                *kept = Some(outcome);
                crate::drivers::timed::set_timer_at(timer, until);
                *self.on = true;
                Ok(())
            }
            _ => Err(outcome),
        }
    }

    /// The outcome once the wait is over (`Pending` while it runs); `None` when not waiting.
    fn poll(
        &mut self,
        mut timer: Pin<&mut Option<Sleep>>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<O>> {
        if !*self.on {
            return Poll::Ready(None);
        }
        if let Some(sleep) = timer.as_mut().as_pin_mut() {
            ready!(sleep.poll(cx));
        }
        timer.set(None);
        let kept = self.kept.as_deref_mut().and_then(Option::take);
        Poll::Ready(Some(
            kept.expect("reattempt: a lingering call keeps its outcome"),
        ))
    }
}

/// Points the call's timer at the end of the attempt just begun, if it has a time limit, and
/// notes that end for [`RetryContext::remaining`](crate::RetryContext::remaining).
fn arm_attempt_limit(
    engine: &Engine<'_>,
    mut timer: Pin<&mut Option<Sleep>>,
    limit: Option<Duration>,
) {
    if let Some(limit) = limit {
        let at = crate::engine::deadline::instant_after(tokio::time::Instant::now(), limit);
        engine.note_attempt_deadline(Some(at));
        crate::drivers::timed::set_timer_at(timer, at);
    } else {
        timer.set(None);
    }
}

/// The call's error for an attempt a guard turned away for `reason` (see `steps::admit`).
fn rejection<E, R, B, G, Q, L>(settings: &Settings<R, B, G, Q, L>, reason: GiveUpReason) -> E
where
    B: BreakerFor<E>,
    Q: ThrottleFor<E>,
    L: BulkheadFor<E>,
{
    match reason {
        GiveUpReason::BulkheadFull => settings.bulkhead.full(),
        GiveUpReason::BreakerOpen => settings.breaker.rejection(),
        _ => settings.throttle.shed(),
    }
}

/// A hedged call (a policy with `hedge_after`): the closure driver's loop
/// (`drivers::hedged::poll_hedged`), whose copies are [`CopyAttempt`]s. The first copy is made
/// by the service the caller readied; every later one (a hedge or a retry) by a fresh clone of
/// it, which it asks `poll_ready` first. Copies share the call's context (its key); each passes
/// the breaker and the throttle; the call holds one bulkhead slot for all of them.
#[allow(
    clippy::too_many_arguments,
    reason = "the projected fields of the future"
)]
fn drive_hedged<S, Req, H, C, R, B, G, Q, L>(
    engine: &mut Engine<'_>,
    settings: &Settings<R, B, G, Q, L>,
    hooks: &mut H,
    timeout: &mut C,
    service: &mut S,
    request: &Req,
    ready: &mut bool,
    slot: &mut SlotOf<L>,
    (hedged, failed): &mut (Hedged<CopyAttempt<S, Req>>, Arc<AtomicBool>),
    last: Option<&mut Option<Result<S::Response, S::Error>>>,
    mut timer: Pin<&mut Option<Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, S::Error>>
where
    S: Service<Req> + Clone,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error>,
    C: TimeoutInto<S::Error>,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    // Called in the copy's context (`start_copy`), so that `replay` sees its attempt and key.
    let mut op = || {
        let readied = std::mem::take(ready);
        let copy = if readied {
            let fresh = service.clone();
            std::mem::replace(service, fresh)
        } else {
            service.clone()
        };
        CopyAttempt {
            service: copy,
            pending: Some(settings.replay.replay(request)),
            ready: readied,
            failed: Arc::clone(failed),
            future: None,
        }
    };
    let mut call = HedgeCall {
        engine,
        name: settings.name,
        op: &mut op,
        hooks: &mut ReadyAware {
            hooks,
            failed,
            request,
            rule: &settings.replay,
            classified: false,
        },
        breaker: settings.breaker.breaker(),
        throttle: settings.throttle.throttle(),
        reject: |reason| rejection(settings, reason),
        budget: settings.budget.budget(),
        timeout,
        timer: timer.as_mut(),
    };
    let poll_slot = |engine: &Engine<'_>, cx: &mut Context<'_>| match settings.bulkhead.slots() {
        Some(slots) => steps::poll_slot(slots, slot, engine, C::APPLIES, cx),
        None => Poll::Ready(false),
    };
    let mut out = ready!(poll_hedged(&mut call, hedged, last, poll_slot, cx));
    settings.replay.finish(&mut out, engine.attempt());
    timer.set(None);
    // The call is over: its bulkhead slot (one for all its copies) is free for another.
    *slot = CallSlot::Untaken;
    Poll::Ready(out)
}

#[cfg(feature = "http")]
pub use self::http::{
    DefaultRule, HttpHooks, HttpReplay, HttpRequests, HttpRetryLayer, HttpRetryService,
    ReplayBodyLayer, ReplayBodyService, RequestHook, RetryAfterHeader, TransientStatus,
};
// The server side of `http::OUTER_ATTEMPTS_LEFT` (clients/outer.rs).
#[cfg(feature = "http")]
pub use crate::clients::outer::{OuterRetryLayer, OuterRetryService};

/// The ready HTTP classification (feature `http`).
#[cfg(feature = "http")]
mod http {
    use std::error::Error;
    use std::time::Duration;

    use http::{Request, Response};

    use super::{
        Classify, Cloned, Replay, RetryLayer, RetryRequest, RetryService, SaysIdempotent as _,
        Settings,
    };
    use crate::classify::Transient;
    use crate::classify::http::{
        Attempts, SafetyRule, Verdict, never_sent, not_processed, safe_to_resend,
    };
    use crate::clients::replay_body::{Committed, DEFAULT_REPLAY_CAP, ReplayBody};
    use crate::drivers::timeout::ElapsedInto;
    use crate::engine::hooks::{ErrorHook, OkHook, Unset};

    /// Copies an `http::Request<B>` with a `Clone` body for each attempt (method, URI, version,
    /// headers, extensions and body), and with [`RetryLayer::idempotency_key_header`] sets its
    /// `Idempotency-Key` header to the call's key (the same on every attempt) unless the
    /// request has one. With [`RetryLayer::outer_attempts_header`], while the call (or one
    /// around it) has attempts left after this one, it sets
    /// [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) to how many, so that a server
    /// behind [`OuterRetryLayer`](super::OuterRetryLayer) leaves the retrying to this call
    /// (`one_layer`).
    ///
    /// It also decides whether a request is sent again ([`RetryRequest`]): HTTP's safety rule
    /// (see [`RetryLayer::http`]), or `F`, the hook of [`RetryLayer::retry_request`]. And it
    /// records the number of attempts made in the final response's extensions
    /// ([`Attempts`](crate::http::Attempts)).
    #[derive(Debug, Clone, Copy, Default)]
    pub struct HttpRequests<F = DefaultRule> {
        safety: SafetyRule,
        outer_attempts: bool,
        rule: F,
    }

    /// The decision of a layer without a [`retry_request`](RetryLayer::retry_request) hook:
    /// [`Verdict::retry`].
    ///
    /// ```
    /// use reattempt::http::Verdict;
    /// use reattempt::tower::{DefaultRule, RequestHook};
    ///
    /// let post = http::Request::post("http://api.test/orders").body(()).unwrap();
    /// let lost: Result<&http::Response<()>, &std::io::Error> =
    ///     Err(&std::io::ErrorKind::ConnectionReset.into());
    /// let verdict = Verdict { retryable: true, safe: false };
    /// assert!(!DefaultRule.decide(&post, lost, verdict));
    /// ```
    #[derive(Debug, Clone, Copy, Default)]
    pub struct DefaultRule;

    /// A layer's [`RetryLayer::http`] layer, its hooks and its request copies as `.http()` sets
    /// them, with no guard: a name for a struct's field (with guards or other hooks, spell
    /// [`RetryLayer`]'s parameters out).
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::{HttpRetryLayer, RetryLayer};
    ///
    /// struct Clients {
    ///     retry: HttpRetryLayer,
    /// }
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let clients = Clients { retry: RetryLayer::new(policy).http().idempotency_key_header() };
    /// # let _ = clients.retry;
    /// ```
    pub type HttpRetryLayer<C = ElapsedInto, F = DefaultRule> =
        RetryLayer<HttpHooks, C, HttpRequests<F>>;

    /// The service an [`HttpRetryLayer`] makes, to store in a struct's field:
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::{HttpRetryService, RetryLayer};
    /// use tower::Layer;
    ///
    /// /// A client over any `Service<http::Request<B>>` (hyper-util's).
    /// struct Api<S> {
    ///     http: HttpRetryService<S>,
    /// }
    ///
    /// impl<S> Api<S> {
    ///     fn new(client: S) -> Self {
    ///         let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
    ///         Api { http: layer.layer(client) }
    ///     }
    /// }
    /// # struct Client;
    /// # let _ = Api::new(Client).http;
    /// ```
    pub type HttpRetryService<S, C = ElapsedInto, F = DefaultRule> =
        RetryService<S, HttpHooks, C, HttpRequests<F>>;

    impl<Body: Clone, F> Replay<Request<Body>> for HttpRequests<F> {
        fn replay(&self, request: &Request<Body>) -> Request<Body> {
            let mut copy = Request::new(request.body().clone());
            *copy.method_mut() = request.method().clone();
            *copy.uri_mut() = request.uri().clone();
            *copy.version_mut() = request.version();
            *copy.headers_mut() = request.headers().clone();
            *copy.extensions_mut() = request.extensions().clone();
            crate::http::set_attempt_headers(
                copy.headers_mut(),
                self.safety.idempotency_key,
                self.outer_attempts,
            );
            copy
        }
    }

    /// The error `E` as a `dyn Error`, when it is one of the types that can hold another's:
    /// `tower::BoxError` (`Box<dyn Error + Send + Sync>`) and its siblings, `std::io::Error`,
    /// (feature `reqwest`) `reqwest::Error`. Other types' sources cannot be seen.
    ///
    /// `E` is told by its identity without lifetimes (`typeid`), not by `Any`: an `E: 'static`
    /// bound here is a bound of the layer's `Service` impl, and rustc checks a spawned async
    /// block's `Send` for every lifetime of the types it holds, where `Box<dyn Error + Send +
    /// Sync + '_>` is not `'static`: the HTTP guide's stack (`.http()` over `map_err(BoxError::from)`)
    /// then failed to compile inside `tokio::spawn` ("implementation of `From` is not general
    /// enough"; `tests/spawned_stacks.rs` holds it).
    #[allow(
        unsafe_code,
        reason = "a lifetime the type system cannot see; see the SAFETY notes"
    )]
    fn as_error<E>(error: &E) -> Option<&(dyn Error + 'static)> {
        let id = typeid::of::<E>();
        let pointer = std::ptr::from_ref(error);
        // SAFETY (the three boxes): `E` is `Box<dyn Error + … + 'x>` for some `'x` (the ids
        // ignore lifetimes), the same layout as the `'static` box. The object is seen as
        // `'static` only for the borrow of `error`, by `never_sent`, which asks for its sources
        // (`'static` in any case) and downcasts it to lifetime-free types (`io::Error`,
        // `reqwest::Error`): nothing borrowed for `'x` can be taken out longer.
        if id == typeid::of::<Box<dyn Error + Send + Sync>>() {
            let boxed = unsafe { &*pointer.cast::<Box<dyn Error + Send + Sync>>() };
            return Some(&**boxed);
        }
        if id == typeid::of::<Box<dyn Error + Send>>() {
            let boxed = unsafe { &*pointer.cast::<Box<dyn Error + Send>>() };
            return Some(&**boxed);
        }
        if id == typeid::of::<Box<dyn Error>>() {
            let boxed = unsafe { &*pointer.cast::<Box<dyn Error>>() };
            return Some(&**boxed);
        }
        // SAFETY: `E` is `io::Error`, which has no lifetime: the cast is exact.
        if id == typeid::of::<std::io::Error>() {
            return Some(unsafe { &*pointer.cast::<std::io::Error>() });
        }
        // SAFETY: `E` is `reqwest::Error`, which has no lifetime: the cast is exact.
        #[cfg(feature = "reqwest")]
        if id == typeid::of::<reqwest::Error>() {
            return Some(unsafe { &*pointer.cast::<reqwest::Error>() });
        }
        None
    }

    impl<F> HttpRequests<F> {
        /// The [`Verdict`] on an outcome of `request`.
        fn verdict<B, B2, E>(
            &self,
            request: &Request<B>,
            outcome: Result<&Response<B2>, &E>,
            retryable: bool,
        ) -> Verdict {
            let not_acted_on = match outcome {
                Ok(response) => not_processed(response.status()),
                Err(error) => as_error(error).is_some_and(never_sent),
            };
            let safe = safe_to_resend(
                request.method(),
                request.headers(),
                self.safety,
                not_acted_on,
            );
            Verdict { retryable, safe }
        }
    }

    /// A hook of [`RetryLayer::retry_request`]: a closure
    /// `Fn(&Request<B>, Result<&Response<B2>, &E>, Verdict) -> bool`, or [`DefaultRule`] (none:
    /// [`Verdict::retry`]).
    ///
    /// ```
    /// use reattempt::http::Verdict;
    /// use reattempt::tower::RequestHook;
    ///
    /// type Response = http::Response<()>;
    /// let search_is_safe =
    ///     |req: &http::Request<()>, _: Result<&Response, &std::io::Error>, v: Verdict| {
    ///         v.retryable && (v.safe || req.uri().path() == "/search")
    ///     };
    /// let search = http::Request::post("http://api.test/search").body(()).unwrap();
    /// let unavailable = http::Response::builder().status(500).body(()).unwrap();
    /// let verdict = Verdict { retryable: true, safe: false };
    /// assert!(search_is_safe.decide(&search, Ok(&unavailable), verdict));
    /// ```
    pub trait RequestHook<Req, T, E> {
        /// Whether to retry after `outcome`, given the layer's `verdict`.
        fn decide(&self, request: &Req, outcome: Result<&T, &E>, verdict: Verdict) -> bool;
    }

    impl<Req, T, E> RequestHook<Req, T, E> for DefaultRule {
        #[inline]
        fn decide(&self, _: &Req, _: Result<&T, &E>, verdict: Verdict) -> bool {
            verdict.retry()
        }
    }

    impl<Req, T, E, F: Fn(&Req, Result<&T, &E>, Verdict) -> bool> RequestHook<Req, T, E> for F {
        #[inline]
        fn decide(&self, request: &Req, outcome: Result<&T, &E>, verdict: Verdict) -> bool {
            self(request, outcome, verdict)
        }
    }

    impl<B, B2, E, F> RetryRequest<Request<B>, Response<B2>, E> for HttpRequests<F>
    where
        F: RequestHook<Request<B>, Response<B2>, E>,
    {
        fn retry_request(
            &self,
            request: &Request<B>,
            outcome: Result<&Response<B2>, &E>,
            retryable: bool,
        ) -> bool {
            if let Ok(response) = outcome {
                // The crate knows a response's class (a 429 is throttling): a `retry_if_ok` of
                // the user's that noted none gets it, as after `transient`.
                crate::classify::effect::note_class_unless_noted(response, || {
                    crate::error_class(&response.status())
                });
            }
            let verdict = self.verdict(request, outcome, retryable);
            let decision = self.rule.decide(request, outcome, verdict);
            if verdict.retryable && !verdict.safe && !decision {
                // A transient failure kept from a retry by the safety rule: an unknown outcome
                // of a request that is not safe to repeat.
                crate::classify::effect::note_refused();
            }
            decision
        }

        fn judges_safety(&self) -> bool {
            true
        }

        /// A copy whose `ReplayBody` clone another copy left behind past the cap.
        fn left_behind(&self, request: &Request<B>, error: &E) -> bool {
            Committed::in_extensions(request.extensions())
                && as_error(error).is_some_and(crate::classify::http::left_behind_by_the_cap)
        }

        /// A `ReplayBody` past its cap: the call is committed to the attempt that read it (the
        /// copies in flight of a hedged call still answer; nothing more starts).
        fn retry_refused(&self, request: &Request<B>) -> Option<crate::GiveUpReason> {
            Committed::in_extensions(request.extensions())
                .then_some(crate::GiveUpReason::NotRetryable)
        }

        fn idempotent(&self, request: &Request<B>) -> Option<bool> {
            Some(self.safety.idempotent(request.method(), request.headers()))
        }

        /// No hedge of a request that may not be sent twice (no outcome yet: the first copy
        /// may be acting on it), nor of one whose `ReplayBody` is past its cap.
        fn hedge_allowed(&self, request: &Request<B>) -> bool {
            !Committed::in_extensions(request.extensions())
                && safe_to_resend(request.method(), request.headers(), self.safety, false)
        }

        fn finish(&self, outcome: &mut Result<Response<B2>, E>, attempts: u32) {
            if let Ok(response) = outcome {
                response.extensions_mut().insert(Attempts(attempts));
            }
        }
    }

    /// A layer's replay slot that the HTTP settings can be added to, in any order: the default
    /// [`Cloned`] (it becomes [`HttpRequests`]) or [`HttpRequests`] itself.
    ///
    /// ```
    /// use reattempt::tower::{Cloned, HttpReplay, HttpRequests, Replay};
    ///
    /// let requests: HttpRequests = Cloned.into_http();
    /// let request = http::Request::get("http://api.test/").body(String::new()).unwrap();
    /// assert_eq!(requests.replay(&request).uri(), "http://api.test/");
    /// ```
    pub trait HttpReplay {
        /// The request-aware hook it carries ([`DefaultRule`] for none).
        type Rule;
        /// The HTTP request copies, with the settings made so far.
        fn into_http(self) -> HttpRequests<Self::Rule>;
    }

    impl HttpReplay for Cloned {
        type Rule = DefaultRule;
        fn into_http(self) -> HttpRequests {
            HttpRequests::default()
        }
    }

    impl<F> HttpReplay for HttpRequests<F> {
        type Rule = F;
        fn into_http(self) -> Self {
            self
        }
    }

    impl<F> super::SaysIdempotent for HttpRequests<F> {
        fn said_idempotent(mut self, idempotent: bool) -> Self {
            self.safety.said = Some(idempotent);
            self
        }
    }

    /// Retries a response whose status is transient (408, 429, 500, 502, 503, 504; see
    /// [`Transient` for `StatusCode`](crate::Transient)).
    #[derive(Debug, Clone, Copy, Default)]
    pub struct TransientStatus;

    impl<B> OkHook<Response<B>> for TransientStatus {
        #[inline]
        fn call(&mut self, response: &Response<B>) -> Option<bool> {
            Some(crate::http::retried_response(
                response.status(),
                response.headers(),
            ))
        }

        /// A 429 response is throttling (`StatusCode`'s [`Transient::class`](crate::Transient::class)).
        #[inline]
        fn class(&mut self, response: &Response<B>) -> Option<crate::ErrorClass> {
            Some(response.status().class())
        }

        /// A transient status not retried (`x-should-retry: false`, the safety rule) is still
        /// the dependency's failure.
        #[inline]
        fn failed(&mut self, response: &Response<B>) -> bool {
            response.status().is_transient()
        }
    }

    /// Reads a retried response's hint: `Retry-After` (both forms), the millisecond fields
    /// (`retry-after-ms`, `x-ms-retry-after-ms`, `x-amz-retry-after`) and the rate-limit fields,
    /// in the order [`server_hint`](crate::http::server_hint) gives.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct RetryAfterHeader;

    impl<B> ErrorHook<Response<B>, Option<Duration>> for RetryAfterHeader {
        fn call(&mut self, response: &Response<B>) -> Option<Option<Duration>> {
            Some(crate::http::server_hint(response.headers()).delay)
        }
    }

    impl<B> super::DelayHook<Response<B>> for RetryAfterHeader {
        fn hint(&mut self, response: &Response<B>) -> Option<Duration> {
            crate::http::server_hint(response.headers()).delay
        }
        fn choose(&mut self, _: &Response<B>, _: u32, _: Duration) -> Option<Duration> {
            None
        }
    }

    /// `delay_for_ok` after `.http()` keeps the server's hint.
    impl super::DelaySlot for RetryAfterHeader {
        type Hint = RetryAfterHeader;
        type Choose = Unset;
        fn into_parts(self) -> (RetryAfterHeader, Unset) {
            (self, Unset)
        }
    }

    /// The hooks [`RetryLayer::http`] sets: every error retried, transient statuses retried,
    /// their `Retry-After` honoured (the safety rule is [`HttpRequests`]'s, on top of them).
    pub type HttpHooks = HttpHooksOf<Unset, Unset, Unset, Unset>;

    /// The hooks [`RetryLayer::http`] sets beside the error settings given before it (`retry_if`
    /// `RI`, `retry_after` `RA`, `on_retry` `OR`, `timeout_if` or `error_class` `TI`).
    pub type HttpHooksOf<RI, RA, OR, TI> =
        Classify<RI, TransientStatus, RA, RetryAfterHeader, OR, TI>;

    impl<RI, RO, RA, RAO, OR, TI, C, R: HttpReplay + Clone, B: Clone, G: Clone, Q: Clone, L: Clone>
        RetryLayer<Classify<RI, RO, RA, RAO, OR, TI>, C, R, B, G, Q, L>
    where
        R::Rule: Clone,
    {
        /// The ready HTTP classification, for a service of `http::Request<Body>` (hyper's,
        /// hyper-util's, tonic's clients): each attempt sends a copy of the request (its body
        /// must be `Clone`: `Full<Bytes>`, `String`, or a streaming body made replayable by
        /// [`ReplayBodyLayer`], see below; a bare streaming body does not compile); every
        /// error is retried (a connection reset, a response lost), within the safety rule below;
        /// a response with a transient
        /// status (408, 429, 500, 502, 503, 504) is retried, after at least the delay its
        /// `Retry-After` asks for (both forms), and when no retry is left, returned as it is.
        /// With [`outer_attempts_header`](RetryLayer::outer_attempts_header), each attempt that
        /// has attempts left after it (or whose call is nested in one that has) carries
        /// [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT), for `one_layer` across
        /// services ([`OuterRetryLayer`](super::OuterRetryLayer)).
        /// The other settings still apply (`.retry_if` narrows the errors retried).
        ///
        /// HTTP's safety rule (RFC 9110 §9.2.2): a request whose method is not
        /// [`idempotent`](crate::http::idempotent) (`POST`, `PATCH`) is retried only when
        /// sending it again cannot do its side effect twice:
        /// - it carries an `Idempotency-Key` (its own, or the call's with
        ///   [`idempotency_key_header`](RetryLayer::idempotency_key_header));
        /// - the attempt provably never reached the server: a refused connection, found in the
        ///   error's sources ([`never_sent`](crate::http::never_sent)) when the service's error
        ///   is a `tower::BoxError`, an `io::Error` or a `reqwest::Error` (the layer cannot look
        ///   inside other types);
        /// - the server answered 408 or 429: it says it did not act on the request. A 500, 502,
        ///   503 or 504 may come after it did (a gateway's, or a service mesh's 503, after its
        ///   upstream did),
        ///   so they are returned, as a lost response (a reset after the request was read, an
        ///   attempt the policy's `timeout` cut) is;
        /// - or [`retry_unsafe_methods(true)`](RetryLayer::retry_unsafe_methods) says so.
        ///
        /// [`retry_request`](RetryLayer::retry_request) decides per request instead. The
        /// settings of this paragraph and `.http()` may come in any order. The rule governs
        /// hedges too: with the policy's `hedge_after`, no copy of a request that may not be
        /// sent twice starts. A transient failure the rule keeps from a retry still counts as
        /// the dependency's failure for the circuit breaker.
        ///
        /// The final response carries the number of attempts made for it in its extensions
        /// ([`Attempts`](crate::http::Attempts)).
        ///
        /// ```
        /// use reattempt::RetryPolicy;
        /// use reattempt::tower::RetryLayer;
        ///
        /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
        ///     .http()
        ///     .idempotency_key_header()
        ///     .name("payments");
        /// # let _ = layer;
        /// ```
        ///
        /// **Streaming bodies.** A body that is not `Clone` (a stream, an upload, hyper's
        /// `Incoming` being proxied) is made replayable by [`ReplayBodyLayer`] in front of this
        /// layer: it takes a plain `Request<B>`, wraps its body in a
        /// [`ReplayBody`](crate::http::ReplayBody) that records what the first attempt sends
        /// (up to a cap, 64 KiB by default) and replays it to the next ones, and hands this
        /// layer a `Request<ReplayBody<B>>` (so the inner service, a hyper-util `Client`, is
        /// built for that body type). Past the cap the call is committed to the attempt that
        /// sends the body: it is sent once, never buffered beyond the cap, and neither retried
        /// nor hedged (its outcome is returned as it is). A request made with
        /// [`ReplayBody::request`](crate::http::ReplayBody::request) works the same without the
        /// layer.
        ///
        /// ```
        /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
        /// #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// async fn main() {
        ///     use std::sync::{Arc, Mutex};
        ///     use bytes::Bytes;
        ///     use http::{Request, Response, StatusCode};
        ///     use http_body_util::{BodyExt, StreamBody};
        ///     use http_body::Frame;
        ///     use reattempt::RetryPolicy;
        ///     use reattempt::http::ReplayBody;
        ///     use reattempt::tower::{ReplayBodyLayer, RetryLayer};
        ///     use tower::Layer;
        ///     use tower::Service;
        ///
        ///     /// A body streamed in chunks (not `Clone`).
        ///     type Upload = StreamBody<Chunks>;
        /// # struct Chunks(u32, usize);
        /// # fn chunks(n: u32, size: usize) -> Chunks { Chunks(n, size) }
        /// # impl futures_core::Stream for Chunks {
        /// #     type Item = Result<Frame<Bytes>, std::convert::Infallible>;
        /// #     fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>)
        /// #         -> std::task::Poll<Option<Self::Item>> {
        /// #         if self.0 == 0 { return std::task::Poll::Ready(None) }
        /// #         self.0 -= 1;
        /// #         let chunk = Bytes::from(vec![u8::try_from(self.0).unwrap(); self.1]);
        /// #         std::task::Poll::Ready(Some(Ok(Frame::data(chunk))))
        /// #     }
        /// # }
        ///
        ///     // A server that reads each request's body and answers 503, then 201.
        ///     #[derive(Clone, Default)]
        ///     struct Server(Arc<Mutex<Vec<Bytes>>>);
        ///     impl Service<Request<ReplayBody<Upload>>> for Server {
        ///         type Response = Response<String>;
        ///         type Error = Box<dyn std::error::Error + Send + Sync>;
        ///         type Future = std::pin::Pin<Box<dyn std::future::Future<
        ///             Output = Result<Response<String>, Self::Error>> + Send>>;
        ///         fn poll_ready(&mut self, _: &mut std::task::Context<'_>)
        ///             -> std::task::Poll<Result<(), Self::Error>> {
        ///             std::task::Poll::Ready(Ok(()))
        ///         }
        ///         fn call(&mut self, req: Request<ReplayBody<Upload>>) -> Self::Future {
        ///             let seen = Arc::clone(&self.0);
        ///             Box::pin(async move {
        ///                 let body = req.into_body().collect().await?.to_bytes();
        ///                 let mut seen = seen.lock().unwrap();
        ///                 seen.push(body);
        ///                 let status = if seen.len() == 1 { 503 } else { 201 };
        ///                 Ok(Response::builder().status(status).body(String::new())?)
        ///             })
        ///         }
        ///     }
        ///
        ///     let server = Server::default();
        ///     let retry = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
        ///     let mut svc = ReplayBodyLayer::new(1 << 20).layer(retry.layer(server.clone()));
        ///
        ///     let upload = StreamBody::new(chunks(4, 1000));
        ///     let response = svc.call(Request::put("http://api.test/blob").body(upload).unwrap());
        ///     assert_eq!(response.await.unwrap().status(), StatusCode::CREATED);
        ///     let seen = server.0.lock().unwrap();
        ///     assert_eq!(seen.len(), 2);
        ///     assert_eq!(seen[0].len(), 4000);
        ///     assert_eq!(seen[0], seen[1], "the same bytes on both attempts");
        /// }
        /// ```
        ///
        /// `.http()` may come after other classification settings (`retry_if`, `retry_after`,
        /// `on_retry`, `timeout_if`, `error_class`), which it keeps; it sets the responses'
        /// (`retry_if_ok`, `retry_after_ok`), so settings of those come after it.
        #[allow(
            clippy::type_complexity,
            reason = "the layer's settings, one type parameter each"
        )]
        pub fn http(
            self,
        ) -> RetryLayer<HttpHooksOf<RI, RA, OR, TI>, C, HttpRequests<R::Rule>, B, G, Q, L> {
            self.map_http(|requests| requests).map_hooks(|h| Classify {
                retry_if: h.retry_if,
                retry_if_ok: TransientStatus,
                retry_after: h.retry_after,
                retry_after_ok: RetryAfterHeader,
                on_retry: h.on_retry,
                timeout_if: h.timeout_if,
            })
        }
    }

    impl<H, C, R: HttpReplay + Clone, B: Clone, G: Clone, Q: Clone, L: Clone>
        RetryLayer<H, C, R, B, G, Q, L>
    where
        R::Rule: Clone,
    {
        /// Changes the HTTP request copies' settings (`f` gets them as they are so far).
        fn map_http<F2>(
            self,
            f: impl FnOnce(HttpRequests<R::Rule>) -> HttpRequests<F2>,
        ) -> RetryLayer<H, C, HttpRequests<F2>, B, G, Q, L> {
            self.map_settings(|s| Settings {
                // The policy's word on repeating (`RetryPolicyBuilder::idempotent`) is over the
                // method rule, as the layer's own (`idempotent`) is.
                replay: f(match s.policy.idempotent() {
                    Some(said) => s.replay.into_http().said_idempotent(said),
                    None => s.replay.into_http(),
                }),
                policy: s.policy,
                name: s.name,
                breaker: s.breaker,
                budget: s.budget,
                throttle: s.throttle,
                bulkhead: s.bulkhead,
            })
        }

        /// Sets an `Idempotency-Key` header, the call's key
        /// ([`RetryContext::idempotency_key`](crate::RetryContext::idempotency_key)), on every
        /// attempt's request, unless the request has one: the server can tell a retry from a
        /// new call, and perform it once, so a non-idempotent request (a `POST`) becomes safe to
        /// retry after a lost response. Before or after [`http`](RetryLayer::http).
        ///
        /// ```
        /// use reattempt::RetryPolicy;
        /// use reattempt::tower::RetryLayer;
        ///
        /// let policy = RetryPolicy::builder().build().unwrap();
        /// let layer = RetryLayer::new(policy).idempotency_key_header().http();
        /// # let _ = layer;
        /// ```
        #[must_use]
        pub fn idempotency_key_header(self) -> RetryLayer<H, C, HttpRequests<R::Rule>, B, G, Q, L> {
            self.map_http(|r| HttpRequests {
                safety: SafetyRule {
                    idempotency_key: true,
                    ..r.safety
                },
                ..r
            })
        }

        /// With `true`, retries a request whatever its method, as if every method were
        /// idempotent (Polly's `DisableForUnsafeHttpMethods` is the opposite switch): for a
        /// server that deduplicates by other means (a key in the body). Default `false`: see
        /// [`http`](RetryLayer::http) for the safety rule.
        ///
        /// ```
        /// use reattempt::RetryPolicy;
        /// use reattempt::tower::RetryLayer;
        ///
        /// let policy = RetryPolicy::builder().build().unwrap();
        /// let layer = RetryLayer::new(policy).http().retry_unsafe_methods(true);
        /// # let _ = layer;
        /// ```
        #[must_use]
        pub fn retry_unsafe_methods(
            self,
            retry: bool,
        ) -> RetryLayer<H, C, HttpRequests<R::Rule>, B, G, Q, L> {
            self.map_http(|r| HttpRequests {
                safety: SafetyRule {
                    unsafe_methods: retry,
                    ..r.safety
                },
                ..r
            })
        }

        /// Decides, for each attempt's outcome, whether the request is sent again, seeing the
        /// request (method, URI, headers, extensions), the outcome and what the layer would
        /// decide ([`Verdict`]: whether the classification retries the outcome, whether the
        /// request is safe to send again; the default decision is [`Verdict::retry`]), as
        /// tower's `Policy::retry` sees the request and the result. Called for every outcome,
        /// successes included; `true` retries it (while attempts, `max_elapsed` and the budget
        /// allow), so return `true` only for outcomes worth another attempt. Its argument types
        /// are the service's: write them on the closure.
        ///
        /// ```
        /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
        /// #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// async fn main() {
        ///     use std::io;
        ///     use std::sync::Arc;
        ///     use std::sync::atomic::{AtomicU32, Ordering};
        ///     use http::{Request, Response, StatusCode};
        ///     use reattempt::RetryPolicy;
        ///     use reattempt::http::Verdict;
        ///     use reattempt::tower::RetryLayer;
        ///     use tower::Layer;
        ///     use tower::Service;
        ///
        ///     // A service that answers 500 to every request it counts.
        ///     #[derive(Clone)]
        ///     struct Failing(Arc<AtomicU32>);
        ///     impl Service<Request<String>> for Failing {
        ///         type Response = Response<String>;
        ///         type Error = io::Error;
        ///         type Future = std::future::Ready<io::Result<Response<String>>>;
        ///         fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
        ///             std::task::Poll::Ready(Ok(()))
        ///         }
        ///         fn call(&mut self, _: Request<String>) -> Self::Future {
        ///             self.0.fetch_add(1, Ordering::SeqCst);
        ///             let mut response = Response::new(String::new());
        ///             *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        ///             std::future::ready(Ok(response))
        ///         }
        ///     }
        ///
        ///     // `POST /search` has no side effect: retry it as a `GET`.
        ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
        ///     let sent = Arc::new(AtomicU32::new(0));
        ///     let mut svc = RetryLayer::new(policy)
        ///         .http()
        ///         .retry_request(
        ///             |req: &Request<String>, _: Result<&Response<String>, &io::Error>, v: Verdict| {
        ///                 v.retryable && (v.safe || req.uri().path() == "/search")
        ///             },
        ///         )
        ///         .layer(Failing(Arc::clone(&sent)));
        ///
        ///     let search = Request::post("http://api.test/search").body(String::new()).unwrap();
        ///     assert_eq!(svc.call(search).await.unwrap().status(), 500);
        ///     assert_eq!(sent.swap(0, Ordering::SeqCst), 3, "retried");
        ///
        ///     let order = Request::post("http://api.test/orders").body(String::new()).unwrap();
        ///     assert_eq!(svc.call(order).await.unwrap().status(), 500);
        ///     assert_eq!(sent.load(Ordering::SeqCst), 1, "a POST's 500 is not retried");
        /// }
        /// ```
        pub fn retry_request<F2: Clone>(
            self,
            hook: F2,
        ) -> RetryLayer<H, C, HttpRequests<F2>, B, G, Q, L> {
            self.map_http(|r| HttpRequests {
                safety: r.safety,
                outer_attempts: r.outer_attempts,
                rule: hook,
            })
        }

        /// Sets [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) on an attempt's
        /// request while the call (or a call around it) has attempts left after it, to how
        /// many: a service behind [`OuterRetryLayer`](super::OuterRetryLayer) whose own calls
        /// have `one_layer` then makes one attempt and leaves the retrying to this call. Off by
        /// default, like the idempotency key: it tells the server about the caller's retries.
        ///
        /// ```
        /// use reattempt::RetryPolicy;
        /// use reattempt::tower::RetryLayer;
        ///
        /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
        ///     .http()
        ///     .outer_attempts_header();
        /// # let _ = layer;
        /// ```
        #[must_use]
        pub fn outer_attempts_header(self) -> RetryLayer<H, C, HttpRequests<R::Rule>, B, G, Q, L> {
            self.map_http(|r| HttpRequests {
                outer_attempts: true,
                ..r
            })
        }
    }

    /// A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) that makes a streaming request body replayable,
    /// in front of a [`RetryLayer::http`] layer: it takes a plain `http::Request<B>` and gives
    /// the service it wraps the same request with a
    /// [`ReplayBody<B>`](crate::http::ReplayBody) (made by
    /// [`ReplayBody::request`](crate::http::ReplayBody::request), with the layer's cap), which
    /// records up to the cap what the first attempt sends and replays it to the next. Past the
    /// cap the call is committed to its current attempt: not retried, nor hedged. See
    /// [`RetryLayer::http`] for a full example.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::http::DEFAULT_REPLAY_CAP;
    /// use reattempt::tower::{ReplayBodyLayer, RetryLayer};
    ///
    /// let replay = ReplayBodyLayer::default();
    /// assert_eq!(replay.cap(), DEFAULT_REPLAY_CAP);
    /// let retry = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
    /// // With tower's `ServiceBuilder`: `.layer(replay).layer(retry).service(client)`.
    /// # let _ = (ReplayBodyLayer::new(2 << 20), retry);
    /// ```
    #[derive(Debug, Clone, Copy)]
    pub struct ReplayBodyLayer {
        cap: usize,
    }

    impl ReplayBodyLayer {
        /// Records at most `cap` bytes of each request's body.
        ///
        /// ```
        /// let replay = reattempt::tower::ReplayBodyLayer::new(1 << 20);
        /// assert_eq!(replay.cap(), 1_048_576);
        /// ```
        pub fn new(cap: usize) -> Self {
            ReplayBodyLayer { cap }
        }

        /// The most bytes of a body recorded for a replay.
        ///
        /// ```
        /// assert_eq!(reattempt::tower::ReplayBodyLayer::new(10).cap(), 10);
        /// ```
        pub fn cap(&self) -> usize {
            self.cap
        }
    }

    /// A cap of [`DEFAULT_REPLAY_CAP`](crate::http::DEFAULT_REPLAY_CAP) (64 KiB).
    impl Default for ReplayBodyLayer {
        fn default() -> Self {
            ReplayBodyLayer::new(DEFAULT_REPLAY_CAP)
        }
    }

    impl<S> tower_layer::Layer<S> for ReplayBodyLayer {
        type Service = ReplayBodyService<S>;
        fn layer(&self, inner: S) -> ReplayBodyService<S> {
            ReplayBodyService {
                inner,
                cap: self.cap,
            }
        }
    }

    /// The service a [`ReplayBodyLayer`] makes: it wraps each request's body in a
    /// [`ReplayBody`](crate::http::ReplayBody) and calls the service inside.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::{HttpRetryService, ReplayBodyLayer, ReplayBodyService, RetryLayer};
    /// use tower::Layer;
    ///
    /// /// A client over any `Service<http::Request<ReplayBody<B>>>` (hyper-util's).
    /// struct Uploads<S> {
    ///     http: ReplayBodyService<HttpRetryService<S>>,
    /// }
    ///
    /// impl<S> Uploads<S> {
    ///     fn new(client: S) -> Self {
    ///         let retry = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
    ///         Uploads { http: ReplayBodyLayer::default().layer(retry.layer(client)) }
    ///     }
    /// }
    /// # struct Client;
    /// # let _ = Uploads::new(Client).http;
    /// ```
    #[derive(Debug, Clone)]
    pub struct ReplayBodyService<S> {
        inner: S,
        cap: usize,
    }

    impl<S, B> tower_service::Service<Request<B>> for ReplayBodyService<S>
    where
        S: tower_service::Service<Request<ReplayBody<B>>>,
        B: http_body::Body<Data = bytes::Bytes>,
    {
        type Response = S::Response;
        type Error = S::Error;
        type Future = S::Future;

        #[inline]
        fn poll_ready(
            &mut self,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), S::Error>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, request: Request<B>) -> S::Future {
            self.inner.call(ReplayBody::request(request, self.cap))
        }
    }
}
