//! The user's say in a call: which outcomes to retry, how long a server asks to wait, what to do
//! before a retry, which errors are timeouts. One value, [`Hooks`], that every driver hands to
//! the engine: the code `#[retryable]` generates, the closure API, and any driver to come.
//!
//! The names are the attribute's keys: `retry_if`, `retry_if_ok`, `retry_after`, `on_retry`.

use std::marker::PhantomData;
use std::time::Duration;

use crate::ErrorClass;
use crate::engine::context::RetryContext;
use crate::engine::give_up::GiveUpReason;

/// How a call treats its outcomes. Every method has the default of an attribute without the
/// matching key, so an implementation overrides only what it changes.
///
/// ```
/// use std::time::Duration;
/// use reattempt::Hooks;
///
/// /// Retries 503s only, and waits as long as the server asks.
/// struct Http;
///
/// impl Hooks<String, (u16, Option<Duration>)> for Http {
///     fn retry_if(&mut self, error: &(u16, Option<Duration>)) -> bool {
///         error.0 == 503
///     }
///     fn retry_after(&mut self, error: &(u16, Option<Duration>)) -> Option<Duration> {
///         error.1
///     }
/// }
///
/// let mut hooks = Http;
/// assert!(hooks.retry_if(&(503, None)));
/// assert!(!hooks.retry_if(&(400, None)));
/// assert!(!hooks.retry_if_ok(&"fine".to_owned())); // the default: no `Ok` is retried
/// ```
pub trait Hooks<T, E> {
    /// Whether to retry this error (`retry_if`, `retry_on`, `no_retry_on`). Default: every
    /// error, by the crate's judgement: an attempt the policy's `timeout` cut (which may have
    /// acted) only on an idempotent call (see [`Effect`](crate::Effect)).
    fn retry_if(&mut self, error: &E) -> bool {
        let _ = error;
        crate::may_repeat(crate::Effect::Unstated)
    }

    /// Whether to retry this `Ok` value (`retry_if_ok`); when no retry is left, the last one is
    /// returned. Default: none.
    fn retry_if_ok(&mut self, value: &T) -> bool {
        let _ = value;
        false
    }

    /// Whether [`retry_if_ok`](Hooks::retry_if_ok) may ever ask for a retry: when `false`, the
    /// engine does not ask it, and a successful call does no more than it must. Default: `true`
    /// (the hooks without a `retry_if_ok` say `false`).
    fn retries_ok(&self) -> bool {
        true
    }

    /// How long the server asked to wait before the next attempt (`retry_after`, a
    /// `Retry-After` header): a floor under the schedule's delay. Default: no hint.
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        let _ = error;
        None
    }

    /// How long the server asked to wait, read from an `Ok` value that
    /// [`retry_if_ok`](Hooks::retry_if_ok) retries (a 503 or 429 response's `Retry-After`): a
    /// floor under the schedule's delay, with the rules of [`retry_after`](Hooks::retry_after);
    /// a hint the call cannot wait for returns that `Ok`. Default: no hint. (The attribute and
    /// the closure API retry `Ok` values without hints; the tower layer's and the middleware's
    /// HTTP classification reads responses' `Retry-After` here.)
    fn retry_after_ok(&mut self, value: &T) -> Option<Duration> {
        let _ = value;
        None
    }

    /// The delay before the retry of `error`, chosen from it, from the attempt that failed
    /// (1-based) and from the schedule's delay (`computed`): `Some` replaces the schedule's delay
    /// (`delay_for`; Resilience4j's `IntervalBiFunction`, Polly's `DelayGenerator`, backon's
    /// `adjust`), `None` keeps it. The choice is bounded by `max_delay`, a server's hint
    /// ([`retry_after`](Hooks::retry_after)) is still a floor under it, and a delay that would
    /// end past the call's deadline ends the call, as any delay does. Default: `None`.
    fn delay_for(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        let _ = (error, attempt, computed);
        None
    }

    /// Called before each retry's sleep with the error, the call's context and the sleep
    /// (`on_retry`). Default: nothing.
    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        let _ = (error, context, delay);
    }

    /// Whether the error says it was a timeout (an HTTP client's own read timeout): a retry
    /// after it costs the budget's `timeout_cost`, and the breaker counts it as a failure even
    /// when it is not retried, as an attempt our own `timeout` cut. Default: no error says so.
    fn is_timeout(&mut self, error: &E) -> bool {
        let _ = error;
        false
    }

    /// The class of a retryable error ([`ErrorClass`]): what a retry after it costs the budget
    /// and which delay it grows from. The engine asks it right after
    /// [`retry_if`](Hooks::retry_if), for the same error. Default: a timeout when
    /// [`is_timeout`](Hooks::is_timeout) says so, else the class that the crate's judgement
    /// found for this error while `retry_if` ran ([`transient`](crate::transient) notes
    /// [`Transient::class`](crate::Transient::class): a throttling error is throttling), else
    /// transient (a `retry_if` that does not ask the crate about the error itself says nothing
    /// of its class: a class noted for an inner cause, `transient(&e.source)`, is not `E`'s).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::{ErrorClass, Hooks, Preset, Transient};
    ///
    ///     #[derive(Debug)]
    ///     struct SlowDown;
    ///     impl Transient for SlowDown {
    ///         fn is_transient(&self) -> bool { true }
    ///         fn class(&self) -> ErrorClass { ErrorClass::Throttling }
    ///     }
    ///
    ///     /// States no class: the engine takes the one `transient` noted.
    ///     struct Crate;
    ///     impl Hooks<(), SlowDown> for Crate {
    ///         fn retry_if(&mut self, e: &SlowDown) -> bool {
    ///             reattempt::transient(e)
    ///         }
    ///     }
    ///     let policy = Preset::Aws2026.policy().max_attempts(2).build().unwrap();
    ///     let budget = Preset::Aws2026.budget().build().unwrap();
    ///     let out = policy
    ///         .retry(|| async { Err(SlowDown) })
    ///         .hooks(Crate)
    ///         .without_timeout()
    ///         .budget(&budget)
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(budget.available(), 500 - 5, "a throttling retry: the preset's 5 tokens");
    /// }
    /// ```
    fn class(&mut self, error: &E) -> ErrorClass {
        if self.is_timeout(error) {
            ErrorClass::Timeout
        } else {
            judged_class()
        }
    }

    /// The class of an `Ok` value that [`retry_if_ok`](Hooks::retry_if_ok) retries (a 429
    /// response is throttling), asked right after it. Default: the class the crate's judgement
    /// found while `retry_if_ok` ran (`|r| reattempt::transient(&r.status())` notes a 429's
    /// throttling), else transient.
    fn class_ok(&mut self, value: &T) -> ErrorClass {
        let _ = value;
        judged_class()
    }

    /// Whether an `Ok` value that is not retried is still the dependency's failure (a 503 that
    /// the server said not to retry, `x-should-retry: false`, or that the HTTP safety rule keeps
    /// from being sent again): the call returns it at once, the breaker counts a failure, and
    /// the budget gets nothing back, as for a retried `Ok` returned when no retry is left.
    /// Default: no value is.
    fn ok_failed(&mut self, value: &T) -> bool {
        let _ = value;
        false
    }

    /// Whether an error that is not retried is still the dependency's failure for the breaker
    /// (a transient error that HTTP's safety rule keeps a `POST` from retrying: the reset
    /// happened all the same). Asked only for an error not retried. Default: no error is (a
    /// non-retryable error, a 400, is the caller's, not the dependency's).
    fn error_failed(&mut self, error: &E) -> bool {
        let _ = error;
        false
    }

    /// Whether the call (or its request) says it is safe to repeat after an attempt whose
    /// outcome is unknown (see [`Effect`](crate::Effect)): the closure API's `.idempotent(…)`
    /// (over the policy's [`idempotent`](crate::RetryPolicyBuilder::idempotent)), or, for the
    /// HTTP drivers, what the client or its policy said, else HTTP's method rule (RFC 9110
    /// §9.2.2: `GET`, `PUT`, `DELETE` are; a `POST` is with an `Idempotency-Key`). `None` (the
    /// default): the policy decides (not said: not idempotent).
    fn idempotent(&mut self) -> Option<bool> {
        None
    }

    /// Whether the call may start a hedge (a copy beside the attempt in flight). Default: yes.
    /// HTTP's safety rule says no for a request that may not be sent twice (the `http`
    /// feature's `Verdict`).
    fn hedge_allowed(&mut self) -> bool {
        true
    }

    /// [`delay_for`](Hooks::delay_for) for an `Ok` value that
    /// [`retry_if_ok`](Hooks::retry_if_ok) retries (a 503 response). Default: `None`.
    fn delay_for_ok(&mut self, value: &T, attempt: u32, computed: Duration) -> Option<Duration> {
        let _ = (value, attempt, computed);
        None
    }

    /// Asked after an outcome the call would retry, before the engine's rules: `Some(reason)`
    /// makes no further attempt, for that reason, while the outcome still counts as the
    /// dependency's failure. Alone, the call ends with the outcome; in a hedged call, the copies
    /// in flight still answer, and no copy starts after them. gRPC's layer says so for a
    /// server's pushback asking for no retry and for its throttle at half. Default: `None`.
    fn retry_refused(&mut self) -> Option<GiveUpReason> {
        None
    }

    /// Whether an error the call retries (`retry_if` said yes) is the dependency's failure, for
    /// the breaker and the adaptive throttle. Default: yes. The gRPC layer says no for a copy
    /// whose request body could not be sent (another copy took it past its replay cap): the
    /// client's own doing. Such an error records nothing for the breaker, and never replaces an
    /// outcome the call keeps (a call with a breaker or an adaptive throttle keeps its last real
    /// one): a hedged call whose last copy to end fails so ends with the kept outcome.
    fn counts_as_failure(&mut self, error: &E) -> bool {
        let _ = error;
        true
    }
}

/// The class of the outcome being judged when the hooks state none: the one the crate's judgement
/// noted for it ([`transient`](crate::transient) notes
/// [`Transient::class`](crate::Transient::class); for an error, only a class noted for its own
/// type), else transient. Read inside the engine's judgement only (see `classify::effect`); outside
/// one, transient. (`#[retryable]`'s class probe falls back to it for an error type that does
/// not implement `Transient`.)
#[inline]
pub fn judged_class() -> ErrorClass {
    crate::classify::effect::judged_class().unwrap_or_default()
}

/// A hook left to its default (see [`Hooks`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unset;

/// Hooks made of closures, one per hook, each [`Unset`] until given: what the closure API and the
/// code `#[retryable]` generate.
///
/// The outcome's types are fixed first ([`FnHooks::of`]), so that a closure's parameter types
/// are inferred from them. The builder's methods carry the hooks' names, so the hooks themselves
/// are called through the trait (`Hooks::retry_if(&mut hooks, &error)`).
///
/// ```
/// use reattempt::{FnHooks, Hooks};
///
/// let outcome: Result<u32, &str> = Err("busy");
/// let mut hooks = FnHooks::of(&outcome).retry_if(|e| *e == "busy").retry_if_ok(|n| *n == 0);
/// assert!(Hooks::retry_if(&mut hooks, &"busy"));
/// assert!(!Hooks::retry_if(&mut hooks, &"bad request"));
/// assert!(Hooks::retry_if_ok(&mut hooks, &0));
/// assert_eq!(Hooks::retry_after(&mut hooks, &"busy"), None);
/// ```
pub struct FnHooks<
    T,
    E,
    RetryIf = Unset,
    RetryIfOk = Unset,
    RetryAfter = Unset,
    OnRetry = Unset,
    TimeoutIf = Unset,
> {
    retry_if: RetryIf,
    retry_if_ok: RetryIfOk,
    retry_after: RetryAfter,
    on_retry: OnRetry,
    timeout_if: TimeoutIf,
    /// What the call said of repeating it (`None`: the policy decides).
    idempotent: Option<bool>,
    // `fn` types: the hooks are `Send`, `Sync` and `Clone` as their closures are, whatever `T`
    // and `E` are.
    outcome: PhantomData<fn(&T, &E)>,
}

impl<T, E, A: Clone, B: Clone, C: Clone, D: Clone, F: Clone> Clone
    for FnHooks<T, E, A, B, C, D, F>
{
    fn clone(&self) -> Self {
        FnHooks {
            retry_if: self.retry_if.clone(),
            retry_if_ok: self.retry_if_ok.clone(),
            retry_after: self.retry_after.clone(),
            on_retry: self.on_retry.clone(),
            timeout_if: self.timeout_if.clone(),
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }
}

impl<T, E, A, B, C, D, F> std::fmt::Debug for FnHooks<T, E, A, B, C, D, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnHooks").finish_non_exhaustive()
    }
}

impl<T, E> FnHooks<T, E> {
    /// Every hook at its default.
    #[inline]
    pub fn new() -> Self {
        FnHooks {
            retry_if: Unset,
            retry_if_ok: Unset,
            retry_after: Unset,
            on_retry: Unset,
            timeout_if: Unset,
            idempotent: None,
            outcome: PhantomData,
        }
    }

    /// Every hook at its default, for outcomes of `outcome`'s type (which it only names).
    #[inline]
    pub fn of(outcome: &Result<T, E>) -> Self {
        let _ = outcome;
        Self::new()
    }
}

impl<T, E> Default for FnHooks<T, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, E, A, B, C, D, F> FnHooks<T, E, A, B, C, D, F> {
    /// Retries only the errors `predicate` accepts.
    #[inline]
    pub fn retry_if<P: FnMut(&E) -> bool>(self, predicate: P) -> FnHooks<T, E, P, B, C, D, F> {
        FnHooks {
            retry_if: predicate,
            retry_if_ok: self.retry_if_ok,
            retry_after: self.retry_after,
            on_retry: self.on_retry,
            timeout_if: self.timeout_if,
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }

    /// Retries the `Ok` values `predicate` accepts.
    #[inline]
    pub fn retry_if_ok<P: FnMut(&T) -> bool>(self, predicate: P) -> FnHooks<T, E, A, P, C, D, F> {
        FnHooks {
            retry_if: self.retry_if,
            retry_if_ok: predicate,
            retry_after: self.retry_after,
            on_retry: self.on_retry,
            timeout_if: self.timeout_if,
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }

    /// Reads a server's requested delay from an error.
    #[inline]
    pub fn retry_after<H: FnMut(&E) -> Option<Duration>>(
        self,
        hint: H,
    ) -> FnHooks<T, E, A, B, DelayFor<H, C::Choose>, D, F>
    where
        C: DelaySlot,
    {
        self.map_delay(|slot| slot.with_hint(hint))
    }

    /// Tells the class of the `Ok` values `retry_if_ok` retries (a 429 response is
    /// throttling: its retry grows from `throttling_delay`); keeps the `retry_if_ok` given.
    pub fn ok_class<P: FnMut(&T) -> ErrorClass>(
        self,
        class: P,
    ) -> FnHooks<T, E, A, OkClassOf<B, P>, C, D, F> {
        FnHooks {
            retry_if: self.retry_if,
            retry_if_ok: OkClassOf {
                retry_if_ok: self.retry_if_ok,
                class,
            },
            retry_after: self.retry_after,
            on_retry: self.on_retry,
            timeout_if: self.timeout_if,
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }

    /// Chooses the delay before each retry from the error, the attempt that failed and the
    /// schedule's delay (see [`Hooks::delay_for`]); keeps a `retry_after` given before.
    pub fn delay_for<P: FnMut(&E, u32, Duration) -> Option<Duration>>(
        self,
        choose: P,
    ) -> FnHooks<T, E, A, B, DelayFor<C::Hint, P>, D, F>
    where
        C: DelaySlot,
    {
        self.map_delay(|slot| slot.with_choice(choose))
    }

    /// The hooks with their delay slot (`retry_after`, `delay_for`) made anew from the old one.
    #[inline]
    fn map_delay<S>(self, f: impl FnOnce(C) -> S) -> FnHooks<T, E, A, B, S, D, F> {
        FnHooks {
            retry_if: self.retry_if,
            retry_if_ok: self.retry_if_ok,
            retry_after: f(self.retry_after),
            on_retry: self.on_retry,
            timeout_if: self.timeout_if,
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }

    /// Calls `f` before each retry's sleep.
    #[inline]
    pub fn on_retry<N: FnMut(&E, &RetryContext, Duration)>(
        self,
        f: N,
    ) -> FnHooks<T, E, A, B, C, N, F> {
        FnHooks {
            retry_if: self.retry_if,
            retry_if_ok: self.retry_if_ok,
            retry_after: self.retry_after,
            on_retry: f,
            timeout_if: self.timeout_if,
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }

    /// Tells which errors say they were a timeout (the others are transient).
    #[inline]
    pub fn timeout_if<I: FnMut(&E) -> bool>(
        self,
        predicate: I,
    ) -> FnHooks<T, E, A, B, C, D, TimeoutIf<I>> {
        self.error_class_slot(TimeoutIf(predicate))
    }

    /// Tells each error's class ([`ErrorClass`]): in place of [`timeout_if`](Self::timeout_if),
    /// which it can say too.
    #[inline]
    pub fn error_class<I: FnMut(&E) -> ErrorClass>(
        self,
        class: I,
    ) -> FnHooks<T, E, A, B, C, D, ClassOf<I>> {
        self.error_class_slot(ClassOf(class))
    }

    /// Says whether the call is safe to repeat after an attempt whose outcome is unknown (see
    /// [`Hooks::idempotent`]), over its policy's word.
    #[inline]
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    #[inline]
    fn error_class_slot<I>(self, slot: I) -> FnHooks<T, E, A, B, C, D, I> {
        FnHooks {
            retry_if: self.retry_if,
            retry_if_ok: self.retry_if_ok,
            retry_after: self.retry_after,
            on_retry: self.on_retry,
            timeout_if: slot,
            idempotent: self.idempotent,
            outcome: PhantomData,
        }
    }
}

impl<T, E, A, B, C, D, F> Hooks<T, E> for FnHooks<T, E, A, B, C, D, F>
where
    A: ErrorHook<E, bool>,
    B: OkHook<T>,
    C: DelayHook<E>,
    D: OnRetryHook<E>,
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
    fn idempotent(&mut self) -> Option<bool> {
        self.idempotent
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
    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        self.on_retry.call(error, context, delay);
    }

    #[inline]
    fn is_timeout(&mut self, error: &E) -> bool {
        self.class(error) == ErrorClass::Timeout
    }

    #[inline]
    fn class(&mut self, error: &E) -> ErrorClass {
        self.timeout_if.class(error).unwrap_or_else(judged_class)
    }

    #[inline]
    fn class_ok(&mut self, value: &T) -> ErrorClass {
        self.retry_if_ok.class(value).unwrap_or_else(judged_class)
    }

    #[inline]
    fn ok_failed(&mut self, value: &T) -> bool {
        self.retry_if_ok.failed(value)
    }
}

/// The slot of [`FnHooks`] (and of the tower layer's hooks) that says how long to wait after an
/// error: [`Unset`], or a [`DelayFor`] holding a `retry_after` hint and a `delay_for` choice
/// (each `Unset` until given).
pub trait DelayHook<E> {
    /// The server's hint (`retry_after`), a floor under the delay.
    fn hint(&mut self, error: &E) -> Option<Duration>;
    /// The delay chosen for this error (`delay_for`), in place of the schedule's.
    fn choose(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration>;
}

impl<E> DelayHook<E> for Unset {
    #[inline]
    fn hint(&mut self, _: &E) -> Option<Duration> {
        None
    }
    #[inline]
    fn choose(&mut self, _: &E, _: u32, _: Duration) -> Option<Duration> {
        None
    }
}

/// A `retry_after` hint (`H`) and a `delay_for` choice (`P`), each [`Unset`] or a closure: the
/// delay slot of [`FnHooks`] once either is given.
#[derive(Debug, Clone, Copy)]
pub struct DelayFor<H, P> {
    /// `Fn(&E) -> Option<Duration>`, or [`Unset`].
    pub hint: H,
    /// `Fn(&E, u32, Duration) -> Option<Duration>`, or [`Unset`].
    pub choose: P,
}

impl<E, H: ErrorHook<E, Option<Duration>>, P: ChooseDelay<E>> DelayHook<E> for DelayFor<H, P> {
    #[inline]
    fn hint(&mut self, error: &E) -> Option<Duration> {
        self.hint.call(error).flatten()
    }
    #[inline]
    fn choose(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        self.choose.choose(error, attempt, computed)
    }
}

/// The `delay_for` half of [`DelayFor`]: [`Unset`] or a closure.
pub trait ChooseDelay<E> {
    /// The delay chosen, or `None` to keep the schedule's.
    fn choose(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration>;
}

impl<E> ChooseDelay<E> for Unset {
    #[inline]
    fn choose(&mut self, _: &E, _: u32, _: Duration) -> Option<Duration> {
        None
    }
}

impl<E, P: FnMut(&E, u32, Duration) -> Option<Duration>> ChooseDelay<E> for P {
    #[inline]
    fn choose(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        self(error, attempt, computed)
    }
}

/// A delay slot's two halves, so that giving one (`retry_after` or `delay_for`) keeps the other.
pub trait DelaySlot {
    /// The hint half: [`Unset`] or the closure given.
    type Hint;
    /// The choice half: [`Unset`] or the closure given.
    type Choose;
    /// Takes both halves out.
    fn into_parts(self) -> (Self::Hint, Self::Choose);

    /// The slot with `hint` in place of its hint half (`retry_after`), its choice kept.
    fn with_hint<H>(self, hint: H) -> DelayFor<H, Self::Choose>
    where
        Self: Sized,
    {
        let (_, choose) = self.into_parts();
        DelayFor { hint, choose }
    }

    /// The slot with `choose` in place of its choice half (`delay_for`), its hint kept.
    fn with_choice<P>(self, choose: P) -> DelayFor<Self::Hint, P>
    where
        Self: Sized,
    {
        let (hint, _) = self.into_parts();
        DelayFor { hint, choose }
    }
}

impl DelaySlot for Unset {
    type Hint = Unset;
    type Choose = Unset;
    fn into_parts(self) -> (Unset, Unset) {
        (Unset, Unset)
    }
}

impl<H, P> DelaySlot for DelayFor<H, P> {
    type Hint = H;
    type Choose = P;
    fn into_parts(self) -> (H, P) {
        (self.hint, self.choose)
    }
}

/// The slot of [`FnHooks`] (and of the tower layer's hooks) that tells an error's class:
/// [`Unset`] (every error transient), [`TimeoutIf`] (a predicate naming the timeouts) or
/// [`ClassOf`] (a function giving the class).
pub trait ClassHook<E> {
    /// The class the slot gives `error`, or `None` when unset.
    fn class(&mut self, error: &E) -> Option<ErrorClass>;
}

impl<E> ClassHook<E> for Unset {
    #[inline]
    fn class(&mut self, _: &E) -> Option<ErrorClass> {
        None
    }
}

/// A predicate naming the errors that say they were a timeout (the others are transient): what
/// `timeout_if` sets.
#[derive(Debug, Clone, Copy)]
pub struct TimeoutIf<P>(pub P);

impl<E, P: FnMut(&E) -> bool> ClassHook<E> for TimeoutIf<P> {
    /// A timeout when the predicate says so; else unstated, so that the class the crate's
    /// judgement found (a throttling error's) still applies.
    #[inline]
    fn class(&mut self, error: &E) -> Option<ErrorClass> {
        (self.0)(error).then_some(ErrorClass::Timeout)
    }
}

/// A function giving each error's class: what `error_class` sets (the attribute sets it from
/// [`Transient::class`](crate::Transient::class)).
///
/// ```
/// use reattempt::ErrorClass;
/// use reattempt::runtime::{ClassHook, ClassOf};
///
/// let mut slot = ClassOf(|status: &u16| if *status == 429 { ErrorClass::Throttling } else { ErrorClass::Transient });
/// assert_eq!(slot.class(&429), Some(ErrorClass::Throttling));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ClassOf<P>(pub P);

impl<E, P: FnMut(&E) -> ErrorClass> ClassHook<E> for ClassOf<P> {
    #[inline]
    fn class(&mut self, error: &E) -> Option<ErrorClass> {
        Some((self.0)(error))
    }
}

/// A slot of [`FnHooks`] given the error: [`Unset`] (no answer, so the default applies) or a
/// closure.
pub trait ErrorHook<E, R> {
    /// The closure's answer, or `None` when unset.
    fn call(&mut self, error: &E) -> Option<R>;
}

impl<E, R> ErrorHook<E, R> for Unset {
    #[inline]
    fn call(&mut self, _: &E) -> Option<R> {
        None
    }
}

impl<E, R, P: FnMut(&E) -> R> ErrorHook<E, R> for P {
    #[inline]
    fn call(&mut self, error: &E) -> Option<R> {
        Some(self(error))
    }
}

/// The `retry_if_ok` slot of [`FnHooks`]: [`Unset`] or a closure.
pub trait OkHook<T> {
    /// Whether the slot holds a hook at all (`false` for [`Unset`]): when not, no `Ok` is ever
    /// retried, and the engine asks nothing of it.
    const SET: bool = true;

    /// The closure's answer, or `None` when unset.
    fn call(&mut self, value: &T) -> Option<bool>;

    /// The class of a value this slot retries (a 429 response is throttling), or `None` for
    /// the default (transient). Default: `None`.
    fn class(&mut self, value: &T) -> Option<ErrorClass> {
        let _ = value;
        None
    }

    /// Whether a value this slot does not retry is still a failure (see [`Hooks::ok_failed`]).
    /// Default: `false`.
    fn failed(&mut self, value: &T) -> bool {
        let _ = value;
        false
    }
}

/// A `retry_if_ok` slot with the class of the values it retries (`ok_class`).
#[derive(Debug, Clone, Copy)]
pub struct OkClassOf<B, P> {
    /// The `retry_if_ok` slot.
    pub retry_if_ok: B,
    /// `Fn(&T) -> ErrorClass`.
    pub class: P,
}

impl<T, B: OkHook<T>, P: FnMut(&T) -> ErrorClass> OkHook<T> for OkClassOf<B, P> {
    const SET: bool = B::SET;

    #[inline]
    fn call(&mut self, value: &T) -> Option<bool> {
        self.retry_if_ok.call(value)
    }
    #[inline]
    fn class(&mut self, value: &T) -> Option<ErrorClass> {
        Some((self.class)(value))
    }
    #[inline]
    fn failed(&mut self, value: &T) -> bool {
        self.retry_if_ok.failed(value)
    }
}

impl<T> OkHook<T> for Unset {
    const SET: bool = false;

    #[inline]
    fn call(&mut self, _: &T) -> Option<bool> {
        None
    }
}

impl<T, P: FnMut(&T) -> bool> OkHook<T> for P {
    #[inline]
    fn call(&mut self, value: &T) -> Option<bool> {
        Some(self(value))
    }
}

/// The `on_retry` slot of [`FnHooks`]: [`Unset`] or a closure.
pub trait OnRetryHook<E> {
    /// Calls the closure, if any.
    fn call(&mut self, error: &E, context: &RetryContext, delay: Duration);
}

impl<E> OnRetryHook<E> for Unset {
    #[inline]
    fn call(&mut self, _: &E, _: &RetryContext, _: Duration) {}
}

impl<E, N: FnMut(&E, &RetryContext, Duration)> OnRetryHook<E> for N {
    #[inline]
    fn call(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        self(error, context, delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_hooks_have_the_attributes_defaults() {
        let mut hooks = FnHooks::<u8, &str>::new();
        assert!(Hooks::retry_if(&mut hooks, &"any"));
        assert!(!Hooks::retry_if_ok(&mut hooks, &0));
        assert_eq!(Hooks::retry_after(&mut hooks, &"any"), None);
        assert!(!Hooks::is_timeout(&mut hooks, &"any"));
    }

    #[test]
    fn given_hooks_are_called() {
        let outcome: Result<u8, u16> = Ok(1);
        let mut seen = vec![];
        let mut hooks = FnHooks::of(&outcome)
            .retry_if(|e| *e >= 500)
            .retry_if_ok(|v| *v == 0)
            .retry_after(|e| (*e == 429).then_some(Duration::from_secs(1)))
            .on_retry(|e, _, d| seen.push((*e, d)))
            .timeout_if(|e| *e == 504);
        assert!(Hooks::retry_if(&mut hooks, &503) && !Hooks::retry_if(&mut hooks, &400));
        assert!(Hooks::retry_if_ok(&mut hooks, &0) && !Hooks::retry_if_ok(&mut hooks, &1));
        assert_eq!(
            Hooks::retry_after(&mut hooks, &429),
            Some(Duration::from_secs(1))
        );
        assert_eq!(Hooks::retry_after(&mut hooks, &503), None);
        assert!(Hooks::is_timeout(&mut hooks, &504) && !Hooks::is_timeout(&mut hooks, &503));
        let policy = crate::RetryPolicy::builder().build().unwrap();
        let engine = crate::engine::state::Engine::new(&policy);
        Hooks::on_retry(
            &mut hooks,
            &503,
            &RetryContext::of(&engine),
            Duration::from_millis(5),
        );
        assert_eq!(seen, [(503, Duration::from_millis(5))]);
    }
}
