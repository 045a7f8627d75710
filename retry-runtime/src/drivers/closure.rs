//! The closure API: `policy.retry(|| async { … }).retry_if(…).on_retry(…).await`, with the
//! attribute's names for the same things.

use std::fmt::Debug;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

// For the docs' links only: the conversion that uses it lives in `drivers::timeout`.
#[cfg(doc)]
use crate::convert::FromElapsed;
use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromThrottled};
use crate::drivers::hedged::{HedgeCall, Hedged, poll_hedged};
use crate::drivers::kept::{Keep, KeepsOutcome, NotKept};
use crate::drivers::timed::{poll_attempt, set_timer, set_timer_at};
use crate::drivers::timeout::{ElapsedInto, NoTimeout, TimeoutInto};
use crate::engine::context::{RetryContext, enter};
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::{ClassOf, DelayFor, DelaySlot, FnHooks, Hooks, TimeoutIf};
use crate::engine::state::{Decision, Engine, Start};
use crate::engine::steps;
use crate::error::{BreakerOpen, Elapsed};
use crate::error::{BulkheadFull, Throttled};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::{Bulkhead, CallSlot};
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admitted, Guards};
use crate::schedule::policy::RetryPolicy;

/// No shared guard (the default of a [`Retry`](crate::Retry); see [`Breaker`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBreaker;

/// The shared guards of a [`Retry`](crate::Retry) that need the error type to hold their rejection: the
/// circuit breaker every attempt passes through, the adaptive throttle, and the bulkhead's
/// rejection; each with how its rejection becomes an `E`. Set by
/// [`circuit_breaker`](Retry::circuit_breaker), [`throttle`](Retry::throttle) and
/// [`bulkhead`](Retry::bulkhead), in any order.
///
/// `O`, `S` and `F` say where the breaker's, the throttle's and the bulkhead's conversion comes
/// from: [`ViaTrait`] (the error type's [`FromBreakerOpen`], [`FromThrottled`],
/// [`FromBulkheadFull`], required when the guard is added) or [`Given`] (by
/// [`breaker_open_into`](Retry::breaker_open_into), [`throttled_into`](Retry::throttled_into),
/// [`bulkhead_full_into`](Retry::bulkhead_full_into)).
#[derive(Debug)]
#[allow(
    clippy::struct_field_names,
    clippy::type_complexity,
    reason = "each guard beside the conversion of its rejection"
)]
pub struct Breaker<'b, E, O = ViaTrait, S = ViaTrait, F = ViaTrait> {
    breaker: Option<(&'b CircuitBreaker, fn(BreakerOpen) -> E)>,
    throttle: Option<(&'b AdaptiveThrottle, fn(Throttled) -> E)>,
    full: Option<fn(BulkheadFull) -> E>,
    /// The conversions given by the `…_into` settings, for guards added after them.
    given: (
        Option<fn(BreakerOpen) -> E>,
        Option<fn(Throttled) -> E>,
        Option<fn(BulkheadFull) -> E>,
    ),
    sources: std::marker::PhantomData<fn() -> (O, S, F)>,
}

impl<E, O, S, F> Clone for Breaker<'_, E, O, S, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, O, S, F> Copy for Breaker<'_, E, O, S, F> {}

/// A rejection's conversion comes from the error type's trait ([`FromBreakerOpen`] and its
/// siblings): the default of a [`Breaker`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ViaTrait;

/// A rejection's conversion was given by an `…_into` setting of the [`Retry`](crate::Retry).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given;

/// Where a guard's rejection `R` gets its conversion into `E`: [`ViaTrait`] or [`Given`].
pub trait Conversion<R, E> {
    /// The conversion, from the one an `…_into` setting gave (if any).
    fn pick(given: Option<fn(R) -> E>) -> fn(R) -> E;
}

impl<E: FromBreakerOpen> Conversion<BreakerOpen, E> for ViaTrait {
    fn pick(_: Option<fn(BreakerOpen) -> E>) -> fn(BreakerOpen) -> E {
        E::from_breaker_open
    }
}

impl<E: FromThrottled> Conversion<Throttled, E> for ViaTrait {
    fn pick(_: Option<fn(Throttled) -> E>) -> fn(Throttled) -> E {
        E::from_throttled
    }
}

impl<E: FromBulkheadFull> Conversion<BulkheadFull, E> for ViaTrait {
    fn pick(_: Option<fn(BulkheadFull) -> E>) -> fn(BulkheadFull) -> E {
        E::from_bulkhead_full
    }
}

impl<R, E> Conversion<R, E> for Given {
    fn pick(given: Option<fn(R) -> E>) -> fn(R) -> E {
        given.expect("reattempt: a `Given` conversion is set by its `…_into` setting")
    }
}

impl<'b, E, O, S, F> Breaker<'b, E, O, S, F> {
    /// The same guards, with other conversion sources.
    fn with_sources<O2, S2, F2>(self) -> Breaker<'b, E, O2, S2, F2> {
        Breaker {
            breaker: self.breaker,
            throttle: self.throttle,
            full: self.full,
            given: self.given,
            sources: std::marker::PhantomData,
        }
    }
}

impl<'b, E> Breaker<'b, E> {
    /// The circuit breaker, if any.
    fn circuit(self) -> Option<&'b CircuitBreaker> {
        self.breaker.map(|(b, _)| b)
    }

    /// The adaptive throttle, if any.
    fn throttle(self) -> Option<&'b AdaptiveThrottle> {
        self.throttle.map(|(t, _)| t)
    }

    /// The call's error for an attempt a guard turned away for `reason` (see `steps::admit`).
    fn reject(self, reason: GiveUpReason) -> E {
        match (reason, self.breaker, self.throttle, self.full) {
            (GiveUpReason::BreakerOpen, Some((_, reject)), _, _) => reject(BreakerOpen::new()),
            (GiveUpReason::Throttled, _, Some((_, reject)), _) => reject(Throttled::new()),
            (GiveUpReason::BulkheadFull, _, _, Some(reject)) => reject(BulkheadFull::new()),
            _ => unreachable!("reattempt: a guard rejected an attempt without its conversion"),
        }
    }
}

/// The breaker and the throttle of `guards`, and what they said: the `Guards` for `decide`.
fn admitted_guards<E>(guards: Option<Breaker<'_, E>>, admitted: Admitted) -> Guards<'_> {
    let breaker = guards.and_then(Breaker::circuit);
    let throttle = guards.and_then(Breaker::throttle);
    Guards::NONE.admitted(breaker, throttle, admitted)
}

/// The shared guards of a [`Retry`](crate::Retry), if any: [`NoBreaker`] or [`Breaker`].
pub trait BreakerSlot<E>: KeepsOutcome {
    /// The guards and the conversions of their rejections.
    fn get(&self) -> Option<Breaker<'_, E>>;
}

impl KeepsOutcome for NoBreaker {
    type Kept<O> = NotKept;
}

impl<E, O, S, F> KeepsOutcome for Breaker<'_, E, O, S, F> {
    type Kept<X> = Option<X>;
}

impl<E> BreakerSlot<E> for NoBreaker {
    fn get(&self) -> Option<Breaker<'_, E>> {
        None
    }
}

impl<E, O, S, F> BreakerSlot<E> for Breaker<'_, E, O, S, F> {
    fn get(&self) -> Option<Breaker<'_, E>> {
        Some(self.with_sources())
    }
}

/// A guard slot to which another guard can be added: [`NoBreaker`] or [`Breaker`].
pub trait AddGuard<'b, E> {
    /// Where the breaker's rejection gets its conversion.
    type Open;
    /// Where the throttle's rejection gets its conversion.
    type Shed;
    /// Where the bulkhead's rejection gets its conversion.
    type Full;
    /// The guards set so far.
    fn guards(&self) -> Breaker<'b, E, Self::Open, Self::Shed, Self::Full>;
}

impl<'b, E> AddGuard<'b, E> for NoBreaker {
    type Open = ViaTrait;
    type Shed = ViaTrait;
    type Full = ViaTrait;
    fn guards(&self) -> Breaker<'b, E> {
        Breaker {
            breaker: None,
            throttle: None,
            full: None,
            given: (None, None, None),
            sources: std::marker::PhantomData,
        }
    }
}

impl<'b, E, O, S, F> AddGuard<'b, E> for Breaker<'b, E, O, S, F> {
    type Open = O;
    type Shed = S;
    type Full = F;
    fn guards(&self) -> Self {
        *self
    }
}

impl RetryPolicy {
    /// Retries `op` (a closure making one attempt's future) under this policy.
    ///
    /// The per-attempt `timeout` turns a slow attempt into `E::from_elapsed(Elapsed)`, so by
    /// default the error type must have that conversion ([`FromElapsed`](crate::FromElapsed): every
    /// `From<Elapsed>` type such as `std::io::Error`, `String`, and with their features
    /// `tonic::Status`, `sqlx::Error`, `reqwest::Error`). The policy is a value known only at
    /// run time, so the compiler cannot tell whether it holds a `timeout`; rather than ignore one
    /// silently or fail at run time, an error type that has no conversion (another crate's, such
    /// as `http::StatusCode`, which the orphan rule keeps from `From<Elapsed>`) says which it
    /// wants, once, where the call is written:
    /// [`.timeout_into(|elapsed| …)`](Retry::timeout_into) makes its error from the timeout, and
    /// [`.without_timeout()`](Retry::without_timeout) runs the attempts without a per-attempt limit.
    ///
    /// `max_elapsed` bounds the whole call: no sleep starts that would end at or past it, and a
    /// timed attempt is clipped to what remains (see [`RetryPolicyBuilder::max_elapsed`](crate::RetryPolicyBuilder::max_elapsed)).
    ///
    /// The future is fused the way futures combinators are: polling it after it returned panics
    /// ("polled after completion") rather than running the operation again.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{RetryPolicy, transient};
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(4).build().unwrap();
    ///     let mut calls = 0;
    ///     let out: io::Result<&str> = policy
    ///         .retry(|| {
    ///             calls += 1;
    ///             let n = calls;
    ///             async move { if n < 3 { Err(io::ErrorKind::ConnectionReset.into()) } else { Ok("ok") } }
    ///         })
    ///         .retry_if(transient)
    ///         // A reset may come after the request was acted on: repeated only on a call that
    ///         // is safe to repeat (a read), which says so.
    ///         .idempotent(true)
    ///         .on_retry(|e, ctx, d| {
    ///             println!("attempt {} failed ({e}); retrying in {d:?}", ctx.attempt());
    ///         })
    ///         .await;
    ///     assert_eq!(out.unwrap(), "ok");
    ///     assert_eq!(calls, 3);
    /// }
    /// ```
    pub fn retry<Op, Fut, T, E>(&self, op: Op) -> Retry<'_, Op, FnHooks<T, E>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        Retry {
            policy: self,
            op,
            hooks: FnHooks::new(),
            breaker: NoBreaker,
            budget: None,
            bulkhead: None,
            name: "retry",
            timeout: ElapsedInto,
        }
    }
}

/// A retrying call being set up; `.await` it to run. Made by [`RetryPolicy::retry`].
///
/// Its settings carry the attribute's names: [`retry_if`](Retry::retry_if),
/// [`retry_if_ok`](Retry::retry_if_ok), [`retry_after`](Retry::retry_after),
/// [`on_retry`](Retry::on_retry), [`circuit_breaker`](Retry::circuit_breaker),
/// [`budget`](Retry::budget), [`name`](Retry::name); or one [`Hooks`] value for all the hooks
/// ([`hooks`](Retry::hooks)).
#[must_use = "a retry does nothing until awaited"]
#[derive(Debug, Clone)]
pub struct Retry<'p, Op, K, B = NoBreaker, C = ElapsedInto> {
    policy: &'p RetryPolicy,
    op: Op,
    hooks: K,
    breaker: B,
    budget: Option<&'p RetryBudget>,
    bulkhead: Option<&'p Bulkhead>,
    name: &'static str,
    timeout: C,
}

// Each hook method changes one slot of the hooks' type: the types are long, not complex.
#[allow(clippy::type_complexity, reason = "one type parameter per hook")]
impl<'p, Op, T, E, RI, RO, RA, OR, TI, B, C>
    Retry<'p, Op, FnHooks<T, E, RI, RO, RA, OR, TI>, B, C>
{
    /// Says whether this call is safe to repeat after an attempt whose outcome is unknown (a
    /// reset after the request was written, a timeout after sending: see
    /// [`Effect`](crate::Effect)), over the policy's
    /// [`idempotent`](crate::RetryPolicyBuilder::idempotent). Not said, a call is not.
    /// The crate's own judgement ([`transient`](crate::transient), no `retry_if`, the policy's
    /// `timeout`) repeats an unknown outcome only on an idempotent call, and a hedged policy
    /// starts hedges only for one; a `retry_if` of your own is obeyed as written.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io::{Error, ErrorKind};
    ///     use reattempt::{RetryPolicy, transient};
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let reset = || async { Err::<(), _>(Error::from(ErrorKind::ConnectionReset)) };
    ///     let calls = std::cell::Cell::new(0);
    ///     let counted = || { calls.set(calls.get() + 1); reset() };
    ///     // Not said: a reset may have come after the write landed, so it is not repeated.
    ///     let _ = policy.retry(counted).retry_if(transient).await;
    ///     assert_eq!(calls.replace(0), 1);
    ///     // Said: the call is safe to repeat.
    ///     let _ = policy.retry(counted).retry_if(transient).idempotent(true).await;
    ///     assert_eq!(calls.get(), 3);
    /// }
    /// ```
    pub fn idempotent(self, idempotent: bool) -> Self {
        self.map_hooks(|hooks| hooks.idempotent(idempotent))
    }

    /// Retries only the errors for which `predicate` is `true` (default: every error). The
    /// predicate's argument type is the operation's error type: no annotation needed.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let out: io::Result<()> = policy
    ///         .retry(|| async { Err(io::Error::from(io::ErrorKind::PermissionDenied)) })
    ///         .retry_if(|e| e.kind() == io::ErrorKind::ConnectionReset)
    ///         .await;
    ///     assert_eq!(out.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    /// }
    /// ```
    pub fn retry_if<P: FnMut(&E) -> bool>(
        self,
        predicate: P,
    ) -> Retry<'p, Op, FnHooks<T, E, P, RO, RA, OR, TI>, B, C> {
        self.map_hooks(|h| h.retry_if(predicate))
    }

    /// Retries the `Ok` values for which `predicate` is `true` (default: none), as the
    /// attribute's `retry_if_ok`: a job still pending, an empty page. When no retry is left, the
    /// last `Ok` is returned.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(5).build().unwrap();
    ///     let mut polls = 0;
    ///     let out: io::Result<&str> = policy
    ///         .retry(|| {
    ///             polls += 1;
    ///             let n = polls;
    ///             async move { Ok(if n < 3 { "pending" } else { "done" }) }
    ///         })
    ///         .retry_if_ok(|status| *status == "pending")
    ///         .await;
    ///     assert_eq!(out.unwrap(), "done");
    ///     assert_eq!(polls, 3);
    /// }
    /// ```
    pub fn retry_if_ok<P: FnMut(&T) -> bool>(
        self,
        predicate: P,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, P, RA, OR, TI>, B, C> {
        self.map_hooks(|h| h.retry_if_ok(predicate))
    }

    /// Honours the delay an error asks for (a Retry-After header, gRPC pushback) as a floor: the
    /// sleep is the larger of the hint and the schedule's (jittered) delay, so a zero or past hint
    /// does not send every client back at once. The call never comes back before the server
    /// allows: a hint beyond `max_delay`, or one whose wait would end past `max_elapsed`, ends the
    /// call with that error ([`GiveUpReason::RetryAfterTooLong`](crate::GiveUpReason)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///
    ///     #[derive(Debug, PartialEq)]
    ///     struct Throttled(Duration);
    ///
    ///     let policy = RetryPolicy::builder().max_delay(Duration::from_secs(5)).build().unwrap();
    ///     let out: Result<(), Throttled> = policy
    ///         .retry(|| async { Err(Throttled(Duration::from_secs(60))) })
    ///         .without_timeout()
    ///         .retry_after(|e| Some(e.0))
    ///         .await;
    ///     // 60 s is beyond max_delay: the call ends at once rather than coming back early.
    ///     assert_eq!(out, Err(Throttled(Duration::from_secs(60))));
    /// }
    /// ```
    pub fn retry_after<F: FnMut(&E) -> Option<Duration>>(
        self,
        hint: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, DelayFor<F, RA::Choose>, OR, TI>, B, C>
    where
        RA: DelaySlot,
    {
        self.map_hooks(|h| h.retry_after(hint))
    }

    /// Chooses the delay before each retry from the error, the attempt that failed (1-based) and
    /// the schedule's delay: `Some` replaces the schedule's delay, `None` keeps it (as
    /// Resilience4j's `IntervalBiFunction`, Polly's `DelayGenerator`, backon's `adjust`; the
    /// attribute's `delay_for`). The choice is bounded by `max_delay`; `retry_after`'s hint is
    /// still a floor under it, and a delay that would end past the deadline ends the call.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let start = Instant::now();
    ///     let out: Result<(), String> = policy
    ///         .retry(|| async { Err("busy".to_owned()) })
    ///         // A fixed 250 ms per attempt made, whatever the schedule says.
    ///         .delay_for(|_, attempt, _| Some(Duration::from_millis(250) * attempt))
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(start.elapsed(), Duration::from_millis(250 + 500));
    /// }
    /// ```
    pub fn delay_for<F: FnMut(&E, u32, Duration) -> Option<Duration>>(
        self,
        choose: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, DelayFor<RA::Hint, F>, OR, TI>, B, C>
    where
        RA: DelaySlot,
    {
        self.map_hooks(|h| h.delay_for(choose))
    }

    /// Calls `f` before each retry's sleep, with the error, the call's context and the sleep
    /// (as the attribute's `on_retry`).
    pub fn on_retry<F: FnMut(&E, &RetryContext, Duration)>(
        self,
        f: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, RA, F, TI>, B, C> {
        self.map_hooks(|h| h.on_retry(f))
    }

    /// Tells which errors report a timeout (an HTTP client's own read timeout), so that a retry
    /// after one costs the budget's `timeout_cost`, as after an attempt the policy's `timeout`
    /// cut, and the circuit breaker counts it as a failure even when it is not retried.
    /// [`is_timeout`](crate::is_timeout) asks [`Transient::is_timeout`](crate::Transient).
    /// The errors it does not name keep the class the retry predicate told (a throttling
    /// error's, after `.retry_if(reattempt::transient)`). Default: the policy's own `timeout`
    /// and the errors whose class the predicate told is a timeout (see
    /// [which drivers honour the class](crate::Transient#which-drivers-honour-it-and-when)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{RetryBudget, RetryPolicy, is_timeout};
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    ///     let out: io::Result<()> = policy
    ///         .retry(|| async { Err(io::ErrorKind::TimedOut.into()) })
    ///         .timeout_if(is_timeout)
    ///         .budget(&budget)
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(budget.available(), 90, "one retry after a timeout: timeout_cost, 10");
    /// }
    /// ```
    pub fn timeout_if<F: FnMut(&E) -> bool>(
        self,
        predicate: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, RA, OR, TimeoutIf<F>>, B, C> {
        self.map_hooks(|h| h.timeout_if(predicate))
    }

    /// Tells the class of the `Ok` values [`retry_if_ok`](Self::retry_if_ok) retries (a 429
    /// status is throttling: its retry grows from the policy's `throttling_delay`), as
    /// [`error_class`](Self::error_class) does for errors.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{ErrorClass, Jitter, RetryPolicy};
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(2)
    ///         .delay(Duration::from_millis(10))
    ///         .throttling_delay(Duration::from_secs(1))
    ///         .jitter(Jitter::None)
    ///         .build()
    ///         .unwrap();
    ///     let start = Instant::now();
    ///     // A status code as the `Ok` value (`http::StatusCode` is classed by `error_class`).
    ///     let out: Result<u16, String> = policy
    ///         .retry(|| async { Ok(429) })
    ///         .retry_if_ok(|s| *s == 429)
    ///         .ok_class(|s| if *s == 429 { ErrorClass::Throttling } else { ErrorClass::Transient })
    ///         .await;
    ///     assert_eq!(out, Ok(429));
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1), "a 429 waits throttling_delay");
    /// }
    /// ```
    pub fn ok_class<F: FnMut(&T) -> crate::ErrorClass>(
        self,
        class: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, crate::OkClassOf<RO, F>, RA, OR, TI>, B, C> {
        self.map_hooks(|h| h.ok_class(class))
    }

    /// Tells each error's class ([`ErrorClass`](crate::ErrorClass)), in place of
    /// [`timeout_if`](Self::timeout_if): a throttling error's retry grows from the policy's
    /// `throttling_delay` and costs the budget's `throttling_cost`; a timeout's costs its
    /// `timeout_cost`. The class given here always wins.
    ///
    /// Not needed when the error's class is known without it: a `retry_if` that asks the crate
    /// ([`.retry_if(reattempt::transient)`](crate::transient), `|e| e.is_transient()` on a type
    /// the crate ships an impl for) tells the call [`Transient::class`](crate::Transient::class)
    /// of each error it judges, as `#[retryable]` asks it of a `Transient` type. Needed when
    /// nothing tells it: a rule of your own on a type of your own, or no `retry_if` (the closure
    /// API puts no bound on the error type, and stable Rust cannot ask `Transient` of a type that
    /// may not implement it); then [`error_class`](crate::error_class) asks
    /// [`Transient::class`](crate::Transient::class). The table of which drivers honour the
    /// class, and when, is under [`Transient::class`](crate::Transient#which-drivers-honour-it-and-when).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{ErrorClass, Jitter, RetryPolicy};
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(2)
    ///         .delay(Duration::from_millis(50))
    ///         .throttling_delay(Duration::from_secs(1))
    ///         .jitter(Jitter::None)
    ///         .build()
    ///         .unwrap();
    ///     let start = Instant::now();
    ///     let out: Result<(), String> = policy
    ///         .retry(|| async { Err("429 Too Many Requests".to_owned()) })
    ///         .error_class(|e| if e.starts_with("429") { ErrorClass::Throttling } else { ErrorClass::Transient })
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1), "a throttling retry waits from 1 s");
    /// }
    /// ```
    pub fn error_class<F: FnMut(&E) -> crate::ErrorClass>(
        self,
        class: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, RA, OR, ClassOf<F>>, B, C> {
        self.map_hooks(|h| h.error_class(class))
    }
}

// Each guard and conversion setting changes one slot of the guards' type.
#[allow(
    clippy::type_complexity,
    reason = "one type parameter per conversion source"
)]
impl<'p, Op, K, B, C> Retry<'p, Op, K, B, C> {
    /// All the hooks at once, as one [`Hooks`] value (in place of `retry_if`, `retry_if_ok`,
    /// `retry_after`, `on_retry` and `timeout_if`): a classification shared by many calls.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{Hooks, RetryPolicy};
    ///
    ///     struct ResetsOnly;
    ///     impl<T> Hooks<T, io::Error> for ResetsOnly {
    ///         fn retry_if(&mut self, e: &io::Error) -> bool {
    ///             e.kind() == io::ErrorKind::ConnectionReset
    ///         }
    ///     }
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let mut calls = 0;
    ///     let out: io::Result<()> = policy
    ///         .retry(|| { calls += 1; async { Err(io::ErrorKind::PermissionDenied.into()) } })
    ///         .hooks(ResetsOnly)
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(calls, 1);
    /// }
    /// ```
    pub fn hooks<H>(self, hooks: H) -> Retry<'p, Op, H, B, C> {
        self.map_hooks(|_| hooks)
    }

    fn map_hooks<H>(self, f: impl FnOnce(K) -> H) -> Retry<'p, Op, H, B, C> {
        Retry {
            policy: self.policy,
            op: self.op,
            hooks: f(self.hooks),
            breaker: self.breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            name: self.name,
            timeout: self.timeout,
        }
    }

    fn map_timeout<D>(self, timeout: D) -> Retry<'p, Op, K, B, D> {
        Retry {
            policy: self.policy,
            op: self.op,
            hooks: self.hooks,
            breaker: self.breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            name: self.name,
            timeout,
        }
    }

    /// Makes the error of an attempt the policy's `timeout` cut with `f`, for an error type
    /// without `From<Elapsed>` (or to choose another variant than its `From` impl does).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(2)
    ///         .timeout(Duration::from_millis(10))
    ///         .build()
    ///         .unwrap();
    ///     let out: Result<u32, String> = policy
    ///         .retry(|| std::future::pending())
    ///         .timeout_into(|elapsed| format!("gave up: {elapsed}"))
    ///         .await;
    ///     assert!(out.unwrap_err().starts_with("gave up"));
    /// }
    /// ```
    pub fn timeout_into<F, Fut, T, E>(self, f: F) -> Retry<'p, Op, K, B, F>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        F: FnMut(Elapsed) -> E,
    {
        self.map_timeout(f)
    }

    /// Runs the attempts without a per-attempt time limit, even if the policy sets `timeout`:
    /// for an error type that cannot hold a timeout (`reqwest::Error` has its own timeouts).
    /// `max_elapsed` still bounds the sleeps; with no timeout, an attempt is never cut.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let out: Result<u32, String> = policy
    ///         .retry(|| async { Err("refused".to_string()) })
    ///         .without_timeout()
    ///         .retry_if(|e| e != "refused")
    ///         .await;
    ///     assert_eq!(out.unwrap_err(), "refused");
    /// }
    /// ```
    ///
    /// Without it (or `.timeout_into`), such an error type does not compile, whatever the policy:
    ///
    /// ```compile_fail
    /// # async fn f() {
    /// let policy = reattempt::RetryPolicy::builder().build().unwrap();
    /// let out: Result<u32, std::num::ParseIntError> = policy.retry(|| async { "x".parse() }).await;
    /// # }
    /// ```
    pub fn without_timeout(self) -> Retry<'p, Op, K, B, NoTimeout> {
        self.map_timeout(NoTimeout)
    }

    /// Passes every attempt through `breaker`: while it is open, the call ends at once with
    /// `E::from_breaker_open(BreakerOpen)` ([`FromBreakerOpen`]: a `From<BreakerOpen>` impl,
    /// `String`, or another crate's error with its feature), or with what
    /// [`breaker_open_into`](Self::breaker_open_into), called before, makes. A rejection is never
    /// retried; one that turns away a *retry* ends the call with the last attempt's outcome, as
    /// a budget that cannot pay does.
    pub fn circuit_breaker<E>(
        self,
        breaker: &'p CircuitBreaker,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
        B::Open: Conversion<BreakerOpen, E>,
    {
        let mut guards = self.breaker.guards();
        guards.breaker = Some((breaker, B::Open::pick(guards.given.0)));
        self.map_guards(guards)
    }

    /// Makes the error of a call the breaker rejects with `f`: for an error type without a
    /// [`FromBreakerOpen`] conversion (another crate's), or to choose another value than it
    /// gives. Call it before [`circuit_breaker`](Self::circuit_breaker) when the error type has
    /// no conversion of its own (or after, to replace one). The attribute's key of the same name.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::{CircuitBreaker, RetryPolicy};
    ///
    ///     #[derive(Debug, PartialEq)]
    ///     struct Foreign(&'static str); // no `From<BreakerOpen>`, as another crate's type
    ///
    ///     let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
    ///     let permit = breaker.try_acquire().unwrap();
    ///     breaker.record(permit, false); // open
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let out: Result<(), Foreign> = policy
    ///         .retry(|| async { Ok(()) })
    ///         .without_timeout()
    ///         .breaker_open_into(|_open| Foreign("unavailable"))
    ///         .circuit_breaker(&breaker)
    ///         .await;
    ///     assert_eq!(out, Err(Foreign("unavailable")));
    /// }
    /// ```
    pub fn breaker_open_into<E>(
        self,
        f: fn(BreakerOpen) -> E,
    ) -> Retry<'p, Op, K, Breaker<'p, E, Given, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
    {
        let mut guards = self.breaker.guards();
        guards.given.0 = Some(f);
        if let Some((_, open)) = &mut guards.breaker {
            *open = f;
        }
        self.map_guards(guards.with_sources())
    }

    /// Passes every attempt (retries included) through the client-side adaptive `throttle`
    /// (after the breaker, if any): an attempt it sheds is not made, and the call ends at once
    /// with `E::from_throttled(Throttled)` ([`FromThrottled`]), or what
    /// [`throttled_into`](Self::throttled_into), called before, makes; never retried (a shed
    /// *retry* ends the call with the last attempt's outcome). The throttle hears whether the
    /// dependency accepted each attempt it let through (see [`AdaptiveThrottle`]).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{AdaptiveThrottle, RetryPolicy};
    ///
    ///     let throttle = AdaptiveThrottle::builder().build().unwrap();
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let out: io::Result<u32> = policy.retry(|| async { Ok(7) }).throttle(&throttle).await;
    ///     assert_eq!(out.unwrap(), 7);
    ///     assert_eq!(throttle.counts(), (1, 1), "one request, accepted");
    /// }
    /// ```
    pub fn throttle<E>(
        self,
        throttle: &'p AdaptiveThrottle,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
        B::Shed: Conversion<Throttled, E>,
    {
        let mut guards = self.breaker.guards();
        guards.throttle = Some((throttle, B::Shed::pick(guards.given.1)));
        self.map_guards(guards)
    }

    /// Makes the error of an attempt the throttle sheds with `f` (see
    /// [`breaker_open_into`](Self::breaker_open_into): the same rules, for
    /// [`throttle`](Self::throttle)).
    ///
    /// ```
    /// use reattempt::{AdaptiveThrottle, RetryPolicy};
    ///
    /// struct Foreign;
    /// let throttle = AdaptiveThrottle::builder().build().unwrap();
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let _call = policy
    ///     .retry(|| async { Ok::<(), Foreign>(()) })
    ///     .without_timeout()
    ///     .throttled_into(|_shed| Foreign)
    ///     .throttle(&throttle);
    /// ```
    pub fn throttled_into<E>(
        self,
        f: fn(Throttled) -> E,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, Given, B::Full>, C>
    where
        B: AddGuard<'p, E>,
    {
        let mut guards = self.breaker.guards();
        guards.given.1 = Some(f);
        if let Some((_, shed)) = &mut guards.throttle {
            *shed = f;
        }
        self.map_guards(guards.with_sources())
    }

    /// Holds a slot of `bulkhead` for the whole call, from before its first attempt to its end,
    /// its sleeps included (freed when the future is done, so before a fallback run after it). When every slot is taken (for the bulkhead's `max_wait`, if it has
    /// one) no attempt is made and the call ends at once with
    /// `E::from_bulkhead_full(BulkheadFull)` ([`FromBulkheadFull`]), or what
    /// [`bulkhead_full_into`](Self::bulkhead_full_into), called before, makes; never retried.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{Bulkhead, RetryPolicy};
    ///
    ///     let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let _held = bulkhead.try_acquire().unwrap(); // another call holds the only slot
    ///     let out: io::Result<u32> = policy.retry(|| async { Ok(7) }).bulkhead(&bulkhead).await;
    ///     assert_eq!(out.unwrap_err().to_string(), "bulkhead full");
    /// }
    /// ```
    pub fn bulkhead<E>(
        self,
        bulkhead: &'p Bulkhead,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
        B::Full: Conversion<BulkheadFull, E>,
    {
        let mut guards = self.breaker.guards();
        guards.full = Some(B::Full::pick(guards.given.2));
        let mut retry = self.map_guards(guards);
        retry.bulkhead = Some(bulkhead);
        retry
    }

    /// Makes the error of a call the full bulkhead turns away with `f` (see
    /// [`breaker_open_into`](Self::breaker_open_into): the same rules, for
    /// [`bulkhead`](Self::bulkhead)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::{Bulkhead, RetryPolicy};
    ///
    ///     #[derive(Debug, PartialEq)]
    ///     struct Foreign(u16);
    ///     let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    ///     let _held = bulkhead.try_acquire().unwrap();
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let out: Result<(), Foreign> = policy
    ///         .retry(|| async { Ok(()) })
    ///         .without_timeout()
    ///         .bulkhead_full_into(|_full| Foreign(503))
    ///         .bulkhead(&bulkhead)
    ///         .await;
    ///     assert_eq!(out, Err(Foreign(503)));
    /// }
    /// ```
    pub fn bulkhead_full_into<E>(
        self,
        f: fn(BulkheadFull) -> E,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, Given>, C>
    where
        B: AddGuard<'p, E>,
    {
        let mut guards = self.breaker.guards();
        guards.given.2 = Some(f);
        if let Some(full) = &mut guards.full {
            *full = f;
        }
        self.map_guards(guards.with_sources())
    }

    /// Every guard at once, each if given, with the conversion of each rejection into `E` (for
    /// a driver whose guards are known only at run time, and whose error type cannot implement
    /// `From` for them, as the reqwest middleware's `reqwest_middleware::Error`).
    #[cfg(feature = "reqwest-middleware")]
    #[allow(clippy::type_complexity, reason = "one conversion per guard")]
    pub(crate) fn guards<E>(
        self,
        breaker: Option<&'p CircuitBreaker>,
        throttle: Option<&'p AdaptiveThrottle>,
        bulkhead: Option<&'p Bulkhead>,
        (open, shed, full): (
            fn(BreakerOpen) -> E,
            fn(Throttled) -> E,
            fn(BulkheadFull) -> E,
        ),
    ) -> Retry<'p, Op, K, Breaker<'p, E>, C> {
        let guards = Breaker {
            breaker: breaker.map(|b| (b, open)),
            throttle: throttle.map(|t| (t, shed)),
            full: bulkhead.map(|_| full),
            given: (Some(open), Some(shed), Some(full)),
            sources: std::marker::PhantomData,
        };
        let mut retry = self.map_guards(guards);
        retry.bulkhead = bulkhead;
        retry
    }

    fn map_guards<G>(self, breaker: G) -> Retry<'p, Op, K, G, C> {
        Retry {
            policy: self.policy,
            op: self.op,
            hooks: self.hooks,
            breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            name: self.name,
            timeout: self.timeout,
        }
    }

    /// Pays each retry from `budget` (and each success back into it): when it cannot pay, the
    /// call ends with its last error. The call's type does not change, and nothing of `T` or
    /// `E` is held across a sleep for it: the future stays `Send` whatever they are.
    ///
    /// Under a long-polling policy ([`long_polling`](crate::RetryPolicyBuilder::long_polling))
    /// the call would wait the refused retry's backoff before it returns, holding the outcome
    /// meanwhile: a call with a circuit breaker, a throttle or a bulkhead keeps it and
    /// waits; a call with only a budget waits once it is asked to with
    /// [`long_polling_wait`](Self::long_polling_wait), and otherwise returns at once (one WARN
    /// event says so).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::{RetryBudget, RetryPolicy};
    ///
    ///     // The same type with or without a budget: a budget given only when configured.
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let configured: Option<RetryBudget> = Some(RetryBudget::builder().build().unwrap());
    ///     let call = policy.retry(|| async { Ok::<u8, std::io::Error>(1) });
    ///     let call = if let Some(b) = &configured { call.budget(b) } else { call };
    ///     assert_eq!(call.await.unwrap(), 1);
    /// }
    /// ```
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Lets a long-polling policy's call wait when only its budget refused a retry (see
    /// [`long_polling`](crate::RetryPolicyBuilder::long_polling)): the call keeps its last
    /// outcome across the wait, then returns it. Its future is then `Send` only if `T` and `E`
    /// are (as with a breaker, which keeps the outcome already and needs no opt-in). The
    /// outcome is kept only for that wait (and, with a breaker or a throttle, between
    /// attempts), never across an ordinary backoff sleep because of a budget.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{Jitter, RetryBudget, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .delay(Duration::from_millis(100))
    ///         .jitter(Jitter::None)
    ///         .long_polling(true)
    ///         .build()
    ///         .unwrap();
    ///     let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    ///     let t0 = tokio::time::Instant::now();
    ///     let out: Result<(), &str> = policy
    ///         .retry(|| async { Err("busy") })
    ///         .without_timeout()
    ///         .retry_if(|_| true)
    ///         .budget(&empty)
    ///         .long_polling_wait()
    ///         .await;
    ///     assert_eq!(out, Err("busy"));
    ///     // The budget refused the first retry: the call waited its 100 ms backoff.
    ///     assert_eq!(t0.elapsed(), Duration::from_millis(100));
    /// }
    /// ```
    pub fn long_polling_wait<E>(
        self,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
    {
        let guards = self.breaker.guards();
        self.map_guards(guards)
    }

    /// Labels the call in events (default `"retry"`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}

impl<'p, Op, Fut, T, E, K, B, C> IntoFuture for Retry<'p, Op, K, B, C>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    K: Hooks<T, E>,
    B: BreakerSlot<E>,
    C: TimeoutInto<E>,
{
    type Output = Result<T, E>;
    type IntoFuture = RetryFuture<'p, Op, Fut, K, B, C>;

    fn into_future(self) -> Self::IntoFuture {
        RetryFuture {
            engine: Engine::new(self.policy),
            last: Default::default(),
            name: self.name,
            op: self.op,
            hooks: self.hooks,
            breaker: self.breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            timeout: self.timeout,
            admitted: Admitted::NOT_ASKED,
            slot: CallSlot::Untaken,
            done: false,
            lingering: false,
            hedged: None,
            attempt: None,
            limit: AttemptLimit::Unlimited,
            timer: None,
        }
    }
}

pin_project! {
    #[project = RetryFutureProj]
    /// The future of a [`Retry`](crate::Retry). While an attempt runs, `timer` is its time limit (if any, and
    /// only once the attempt has answered `Pending`: see `limit`); between attempts it is the
    /// backoff sleep.
    #[must_use = "futures do nothing unless awaited"]
    pub struct RetryFuture<'p, Op, Fut: Future, K, B: KeepsOutcome, C = ElapsedInto> {
        engine: Engine<'p>,
        // The last attempt's outcome while a retry waits, when a breaker or a throttle may turn
        // that retry away (the call then ends with it: `steps::decide_keeping`), and during a
        // long-polling wait; no field at all in a slot without such a guard nor
        // `long_polling_wait`.
        last: B::Kept<Fut::Output>,
        name: &'static str,
        op: Op,
        hooks: K,
        breaker: B,
        budget: Option<&'p RetryBudget>,
        bulkhead: Option<&'p Bulkhead>,
        timeout: C,
        // What the guards said about the attempt running now.
        admitted: Admitted,
        // The bulkhead's slot, held from before the first attempt to the end of the call.
        slot: CallSlot<'p>,
        // The call has returned: polling again is a bug, never another round of attempts.
        done: bool,
        // The call gave up and waits on `timer` before it returns its outcome, kept in `last`
        // (a long-polling policy whose retry the budget refused: `Engine::linger`).
        lingering: bool,
        // A hedged call's copies in flight (a policy with `hedge_after`); then `attempt` is
        // unused and `timer` is the next start's (a hedge or a retry).
        hedged: Option<Box<Hedged<Fut>>>,
        #[pin]
        attempt: Option<Fut>,
        // The running attempt's time limit, and whether `timer` is armed for it yet.
        limit: AttemptLimit,
        #[pin]
        timer: Option<Sleep>,
    }
}

impl<'p, Op, Fut: Future, K, B: KeepsOutcome, C> RetryFuture<'p, Op, Fut, K, B, C> {
    /// The call's engine: its context (key, attempts made) for a `#[recover]` fallback run once
    /// the call has ended (see [`Call::recover_after`](crate::__private::Call::recover_after)).
    pub(crate) fn engine(self: Pin<&mut Self>) -> &mut Engine<'p> {
        self.project().engine
    }
}

impl<Op, Fut, T, E, K, B, C> Future for RetryFuture<'_, Op, Fut, K, B, C>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    K: Hooks<T, E>,
    B: BreakerSlot<E>,
    C: TimeoutInto<E>,
{
    type Output = Result<T, E>;

    #[allow(
        clippy::too_many_lines,
        reason = "the engine's steps, in order, in one loop"
    )]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        assert!(!*this.done, "`RetryFuture` polled after completion");
        if this.hedged.is_none()
            && this.engine.attempt() == 0
            && this.engine.policy().hedge_after().is_some()
        {
            *this.hedged = Some(Box::default());
        }
        if let Some(hedged) = this.hedged.as_deref_mut() {
            let guards = this.breaker.get();
            let mut call = HedgeCall {
                engine: &mut *this.engine,
                name: this.name,
                op: &mut *this.op,
                hooks: &mut *this.hooks,
                breaker: guards.and_then(Breaker::circuit),
                throttle: guards.and_then(Breaker::throttle),
                reject: |reason| match guards {
                    Some(g) => g.reject(reason),
                    None => unreachable!("reattempt: a rejection without a guard"),
                },
                budget: *this.budget,
                timeout: &mut *this.timeout,
                timer: this.timer.as_mut(),
            };
            let (bulkhead, slot) = (*this.bulkhead, &mut *this.slot);
            let poll_slot = |engine: &Engine<'_>, cx: &mut Context<'_>| match bulkhead {
                Some(bulkhead) => steps::poll_slot(bulkhead, slot, engine, C::APPLIES, cx),
                None => Poll::Ready(false),
            };
            let out = ready!(poll_hedged(
                &mut call,
                hedged,
                this.last.slot(),
                poll_slot,
                cx
            ));
            this.timer.set(None);
            // The call is over: its bulkhead slot (one for all its copies) is free for another.
            *this.slot = CallSlot::Untaken;
            *this.done = true;
            return Poll::Ready(out);
        }
        // An attempt that fault injection failed, not made (feature `testing`; always `None`
        // without).
        let mut injected_failure: Option<Elapsed> = None;
        loop {
            if *this.lingering {
                // The call is over; its outcome waits in `last` for the timer (long polling).
                if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                    ready!(sleep.poll(cx));
                }
                this.timer.set(None);
                *this.slot = CallSlot::Untaken;
                *this.done = true;
                let kept = this.last.slot().and_then(Option::take);
                return Poll::Ready(kept.expect("reattempt: a lingering call keeps its outcome"));
            }
            // The engine's steps, in order: admit, begin, poll, decide, sleep.
            let outcome = if let Some(fut) = this.attempt.as_mut().as_pin_mut() {
                let timed = !matches!(this.limit, AttemptLimit::Unlimited);
                let (state, mut sleep) = (&mut *this.limit, this.timer.as_mut());
                let arm = move || {
                    if let AttemptLimit::Due(deadline) = *state {
                        set_timer_at(sleep.as_mut(), deadline);
                        *state = AttemptLimit::Armed;
                    }
                    sleep.as_pin_mut()
                };
                let outcome = match ready!(poll_attempt(this.engine, fut, timed, arm, cx)) {
                    Some(outcome) => outcome,
                    None => Err(this.timeout.timed_out(Elapsed::new())),
                };
                this.attempt.set(None);
                outcome
            } else if let Some(failed) = injected_failure.take() {
                // An attempt that fault injection failed (feature `testing`): not made.
                Err(this.timeout.timed_out(failed))
            } else {
                // A fault injected into the attempt begun (feature `testing`): its wait is over
                // when the timer fires; then the attempt fails, or is made under its limit.
                #[cfg(feature = "testing")]
                if let AttemptLimit::Injected(then) = *this.limit {
                    if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                        ready!(sleep.poll(cx));
                    }
                    *this.limit = AttemptLimit::Unlimited;
                    if let Some(failed) = steps::after_fault_wait(this.engine, then) {
                        injected_failure = Some(failed);
                        continue;
                    }
                    let steps::AfterWait::Run(deadline) = then else {
                        unreachable!("reattempt: only a fault to run returns no failure")
                    };
                    let fut = enter(this.engine, &mut *this.op);
                    this.attempt.set(Some(fut));
                    *this.limit = deadline.map_or(AttemptLimit::Unlimited, AttemptLimit::Due);
                    continue;
                }
                if this.engine.attempt() > 0 {
                    // Between attempts: the timer is the backoff sleep.
                    if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                        ready!(sleep.poll(cx));
                    }
                }
                // Ask the guards (`steps::admit`): the bulkhead's slot first, for the whole
                // call (a wait for one is polled here), then the breaker and the throttle.
                let full = match *this.bulkhead {
                    Some(bulkhead) => ready!(steps::poll_slot(
                        bulkhead,
                        this.slot,
                        this.engine,
                        C::APPLIES,
                        cx
                    )),
                    None => false,
                };
                let guards = this.breaker.get();
                *this.admitted = match guards {
                    Some(g) => {
                        steps::admit(this.engine, g.circuit(), g.throttle(), full, C::APPLIES)
                    }
                    None => Admitted::NOT_ASKED,
                };
                if let (Some(reason), Some(g)) = (this.admitted.rejection(), guards) {
                    // Turned away: no attempt is made; `decide` ends the call.
                    Err(g.reject(reason))
                } else {
                    let begun = if C::APPLIES {
                        steps::begin_timed(this.engine)
                    } else {
                        match steps::begin(this.engine, false) {
                            Start::Run(_) => Ok(None),
                            Start::NotMade => Err(steps::NotMade),
                        }
                    };
                    match begun {
                        Err(steps::NotMade) => Err(this.timeout.timed_out(Elapsed::new())),
                        Ok(deadline) => {
                            #[cfg(feature = "testing")]
                            if let Some(fault) = steps::fault(this.engine) {
                                match steps::plan_fault(this.engine, fault, deadline, C::APPLIES) {
                                    steps::FaultPlan::Run => {}
                                    steps::FaultPlan::Fail(failed) => {
                                        injected_failure = Some(failed);
                                        continue;
                                    }
                                    steps::FaultPlan::Wait { until, then } => {
                                        set_timer_at(this.timer.as_mut(), until);
                                        *this.limit = AttemptLimit::Injected(then);
                                        continue;
                                    }
                                }
                            }
                            let fut = enter(this.engine, &mut *this.op);
                            this.attempt.set(Some(fut));
                            *this.limit =
                                deadline.map_or(AttemptLimit::Unlimited, AttemptLimit::Due);
                            continue;
                        }
                    }
                }
            };
            let mut guards = admitted_guards(this.breaker.get(), *this.admitted);
            if let Some(budget) = *this.budget {
                guards = guards.budget(budget);
            }
            // Only a breaker or a throttle may turn the next retry away: without one, nothing
            // is kept across the backoff (the slot may exist only for `long_polling_wait`).
            let turns_away = this
                .breaker
                .get()
                .is_some_and(|g| g.circuit().is_some() || g.throttle().is_some());
            let last = this.last.slot().filter(|_| turns_away);
            let decision =
                steps::decide_kept(this.engine, *this.name, this.hooks, outcome, guards, last);
            match decision {
                Decision::Stop(outcome) => {
                    // Long polling: the outcome is returned once the refused retry's backoff is
                    // over, if the call has a place to keep it (see `long_polling_wait`).
                    if let Some(until) = this.engine.linger() {
                        if let Some(last) = this.last.slot() {
                            *last = Some(outcome);
                            set_timer_at(this.timer.as_mut(), until);
                            *this.lingering = true;
                            continue;
                        }
                        crate::engine::events::long_polling_skipped(this.name);
                    }
                    this.timer.set(None);
                    // The call is over: its bulkhead slot is free for another.
                    *this.slot = CallSlot::Untaken;
                    *this.done = true;
                    return Poll::Ready(outcome);
                }
                Decision::Retry(delay) => set_timer(this.timer.as_mut(), delay),
            }
        }
    }
}

/// An attempt's time limit in a [`RetryFuture`]: none, a deadline the timer is not armed for yet
/// (the attempt has not answered `Pending`), or the timer armed for it.
#[derive(Debug, Clone, Copy)]
enum AttemptLimit {
    Unlimited,
    Due(Instant),
    Armed,
    /// No attempt yet: the timer is an injected fault's wait (feature `testing`), then this.
    #[cfg(feature = "testing")]
    Injected(steps::AfterWait),
}
