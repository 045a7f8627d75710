//! [`RetryLayer`] and its builder methods, over the settings every call of the layer shares.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use super::guards::{Converted, NoGuard, Shared};
use super::hooks::Classify;
use super::replay::{Cloned, SaysIdempotent};
use crate::ErrorClass;
use crate::drivers::timeout::{ElapsedInto, NoTimeout};
use crate::engine::context::RetryContext;
use crate::engine::hooks::{ClassOf, DelayFor, DelaySlot, TimeoutIf};
use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::Bulkhead;
use crate::guards::throttle::AdaptiveThrottle;
use crate::schedule::policy::RetryPolicy;

/// What every call of a layer shares.
#[derive(Debug, Clone)]
pub(super) struct Settings<R, B, G, Q, L> {
    pub(super) policy: RetryPolicy,
    pub(super) name: &'static str,
    pub(super) replay: R,
    pub(super) breaker: B,
    pub(super) budget: G,
    pub(super) throttle: Q,
    pub(super) bulkhead: L,
}

/// A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) that retries the service it wraps under a [`RetryPolicy`]; see the
/// [module](super) for how a call runs.
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
    pub(super) settings: Arc<Settings<R, B, G, Q, L>>,
    pub(super) hooks: H,
    pub(super) timeout: C,
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
    ///
    /// [`FromBreakerOpen`]: crate::convert::FromBreakerOpen
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
    pub(super) fn map_settings<R2, B2, G2, Q2, L2>(
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
    ///
    /// [`Replay`]: super::replay::Replay
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
    ///
    /// [`Hooks`]: crate::engine::hooks::Hooks
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
    pub(super) fn map_hooks<RI2, RO2, RA2, RAO2, OR2, TI2>(
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
