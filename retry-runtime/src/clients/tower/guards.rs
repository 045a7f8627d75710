//! The layer's guard slots: what a call asks of the breaker, the budget, the throttle and the
//! bulkhead the layer may have ([`NoGuard`] when it has none), and how their rejections become
//! the service's error.

use std::ops::Deref;

use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromThrottled};
use crate::drivers::kept::{KeepsOutcome, NotKept};
use crate::error::{BreakerOpen, BulkheadFull, Throttled};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::{Bulkhead, CallSlot, OwnedSlots, SlotSource};
use crate::guards::throttle::AdaptiveThrottle;

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
pub(super) type SlotOf<L> =
    CallSlot<'static, <<L as BulkheadSlot>::Slots as SlotSource<'static>>::Permit>;

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
/// [`RetryLayer::breaker_open_into`], [`throttled_into`][RetryLayer::throttled_into] and
/// [`bulkhead_full_into`][RetryLayer::bulkhead_full_into] make of the guard set before them.
///
/// [RetryLayer::throttled_into]: super::layer::RetryLayer::throttled_into
/// [`RetryLayer::breaker_open_into`]: super::layer::RetryLayer::breaker_open_into
/// [RetryLayer::bulkhead_full_into]: super::layer::RetryLayer::bulkhead_full_into
#[derive(Debug)]
pub struct Converted<S, R, E> {
    pub(super) slot: S,
    pub(super) into: fn(R) -> E,
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
