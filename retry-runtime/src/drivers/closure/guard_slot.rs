//! The shared guards a closure call carries in its type ([`NoBreaker`] or [`Breaker`]), each
//! with how its rejection becomes the call's error.

use std::fmt::Debug;

use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromThrottled};
use crate::drivers::kept::{KeepsOutcome, NotKept};
use crate::engine::give_up::GiveUpReason;
use crate::error::BreakerOpen;
use crate::error::{BulkheadFull, Throttled};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admitted, Guards};

/// No shared guard (the default of a [`Retry`](crate::Retry); see [`Breaker`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBreaker;

/// The shared guards of a [`Retry`](crate::Retry) that need the error type to hold their rejection: the
/// circuit breaker every attempt passes through, the adaptive throttle, and the bulkhead's
/// rejection; each with how its rejection becomes an `E`. Set by
/// [`circuit_breaker`](crate::Retry::circuit_breaker), [`throttle`](crate::Retry::throttle) and
/// [`bulkhead`](crate::Retry::bulkhead), in any order.
///
/// `O`, `S` and `F` say where the breaker's, the throttle's and the bulkhead's conversion comes
/// from: [`ViaTrait`] (the error type's [`FromBreakerOpen`], [`FromThrottled`],
/// [`FromBulkheadFull`], required when the guard is added) or [`Given`] (by
/// [`breaker_open_into`](crate::Retry::breaker_open_into), [`throttled_into`](crate::Retry::throttled_into),
/// [`bulkhead_full_into`](crate::Retry::bulkhead_full_into)).
#[derive(Debug)]
#[allow(
    clippy::struct_field_names,
    clippy::type_complexity,
    reason = "each guard beside the conversion of its rejection"
)]
pub struct Breaker<'b, E, O = ViaTrait, S = ViaTrait, F = ViaTrait> {
    pub(super) breaker: Option<(&'b CircuitBreaker, fn(BreakerOpen) -> E)>,
    pub(super) throttle: Option<(&'b AdaptiveThrottle, fn(Throttled) -> E)>,
    pub(super) full: Option<fn(BulkheadFull) -> E>,
    /// The conversions given by the `…_into` settings, for guards added after them.
    pub(super) given: (
        Option<fn(BreakerOpen) -> E>,
        Option<fn(Throttled) -> E>,
        Option<fn(BulkheadFull) -> E>,
    ),
    pub(super) sources: std::marker::PhantomData<fn() -> (O, S, F)>,
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
    pub(super) fn with_sources<O2, S2, F2>(self) -> Breaker<'b, E, O2, S2, F2> {
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
    pub(super) fn circuit(self) -> Option<&'b CircuitBreaker> {
        self.breaker.map(|(b, _)| b)
    }

    /// The adaptive throttle, if any.
    pub(super) fn throttle(self) -> Option<&'b AdaptiveThrottle> {
        self.throttle.map(|(t, _)| t)
    }

    /// The call's error for an attempt a guard turned away for `reason` (see `steps::admit`).
    pub(super) fn reject(self, reason: GiveUpReason) -> E {
        match (reason, self.breaker, self.throttle, self.full) {
            (GiveUpReason::BreakerOpen, Some((_, reject)), _, _) => reject(BreakerOpen::new()),
            (GiveUpReason::Throttled, _, Some((_, reject)), _) => reject(Throttled::new()),
            (GiveUpReason::BulkheadFull, _, _, Some(reject)) => reject(BulkheadFull::new()),
            _ => unreachable!("reattempt: a guard rejected an attempt without its conversion"),
        }
    }
}

/// The breaker and the throttle of `guards`, and what they said: the `Guards` for `decide`.
pub(super) fn admitted_guards<E>(guards: Option<Breaker<'_, E>>, admitted: Admitted) -> Guards<'_> {
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
