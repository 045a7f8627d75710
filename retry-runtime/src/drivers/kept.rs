//! Where a driver keeps a call's last outcome while a retry waits: a retry that the breaker or
//! the throttle turns away ends the call with it (`steps::decide_keeping`). A call without such
//! a guard keeps nothing ([`NotKept`]), so that its future holds no `T` or `E` across a sleep and
//! is `Send` whatever they are, as before guards existed.

/// A place for the last outcome `O`, or none.
pub trait Keep<O>: Default {
    /// The place, if outcomes are kept.
    fn slot(&mut self) -> Option<&mut Option<O>>;
}

/// Keeps nothing: a call without a breaker or a throttle.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotKept;

impl<O> Keep<O> for NotKept {
    #[inline]
    fn slot(&mut self) -> Option<&mut Option<O>> {
        None
    }
}

impl<O> Keep<O> for Option<O> {
    #[inline]
    fn slot(&mut self) -> Option<&mut Option<O>> {
        Some(self)
    }
}

/// A guard slot's type says whether its call keeps the last outcome: a slot that holds no guard
/// keeps nothing ([`NotKept`]), one that may turn a retry away keeps it (`Option<O>`).
pub trait KeepsOutcome {
    /// Where the outcome `O` is kept.
    type Kept<O>: Keep<O>;
}

/// The place of the first of two slots that keep an outcome (a driver whose breaker and
/// throttle are separate slots).
#[cfg(feature = "tower")]
#[inline]
pub(crate) fn either<'a, O>(
    first: &'a mut impl Keep<O>,
    second: &'a mut impl Keep<O>,
) -> Option<&'a mut Option<O>> {
    match first.slot() {
        Some(slot) => Some(slot),
        None => second.slot(),
    }
}
