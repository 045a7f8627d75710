//! Where a [`RetryStream`](crate::RetryStream) is ([`Phase`]), and the breaker's permit it
//! holds while an attempt opens ([`HeldPermit`]).

use std::pin::Pin;

use crate::guards::breaker::CircuitBreaker;
use crate::guards::{Admitted, Guards};

/// Where a [`RetryStream`](crate::RetryStream) is.
pub(super) enum Phase<Fut, S, RF, RS> {
    /// The next attempt is to be admitted and opened.
    Idle,
    /// `open`'s future, under the timer when the attempt is timed.
    Opening(Pin<Box<Fut>>),
    /// The source, under the idle timer (or the call's deadline).
    Streaming(Pin<Box<S>>),
    /// The backoff before the next open: the timer.
    Sleeping,
    /// The fallback's future.
    Recovering(Pin<Box<RF>>),
    /// The fallback's stream, whose items are handed on as they are.
    Recovered(Pin<Box<RS>>),
    /// Over.
    Done,
}

impl<Fut, S, RF, RS> Phase<Fut, S, RF, RS> {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Opening(_) => "opening",
            Phase::Streaming(_) => "streaming",
            Phase::Sleeping => "sleeping",
            Phase::Recovering(_) => "recovering",
            Phase::Recovered(_) => "recovered",
            Phase::Done => "done",
        }
    }
}

/// The breaker's permit of the attempt being opened, until the attempt's first item, failure
/// or end tells the breaker: given back unused if the stream is dropped before.
pub(super) struct HeldPermit<'p> {
    pub(super) breaker: Option<&'p CircuitBreaker>,
    pub(super) admitted: Admitted,
}

impl<'p> HeldPermit<'p> {
    pub(super) const NONE: HeldPermit<'static> = HeldPermit {
        breaker: None,
        admitted: Admitted::NOT_ASKED,
    };

    /// The guards that hear the attempt, the permit with them (and no longer held here).
    pub(super) fn take(&mut self, guards: Guards<'p>) -> Guards<'p> {
        let admitted = std::mem::replace(&mut self.admitted, Admitted::NOT_ASKED);
        guards.admitted(self.breaker, None, admitted)
    }
}

impl Drop for HeldPermit<'_> {
    fn drop(&mut self) {
        let admitted = std::mem::replace(&mut self.admitted, Admitted::NOT_ASKED);
        Guards::NONE
            .admitted(self.breaker, None, admitted)
            .release();
    }
}
