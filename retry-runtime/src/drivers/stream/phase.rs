//! Where a [`RetryStream`](crate::RetryStream) is ([`Phase`]), its one timer ([`Timer`]), and
//! the breaker's permit it holds while an attempt opens ([`HeldPermit`]).

use std::pin::Pin;
use std::task::Context;

use tokio::time::{Instant, Sleep};

use crate::drivers::timed;

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

/// A stream's one timer: the open's time limit, the idle limit (or the call's deadline) while
/// streaming, or the backoff; reset in place, kept unarmed between its uses.
pub(super) struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    armed: bool,
    /// Whether the task had cooperative budget left before the open or the source was polled.
    had_budget: bool,
}

impl Timer {
    pub(super) const fn new() -> Self {
        Timer {
            sleep: None,
            armed: false,
            had_budget: false,
        }
    }

    /// Sets the timer to `at`, reusing its allocation.
    pub(super) fn arm(&mut self, at: Instant) {
        match &mut self.sleep {
            Some(sleep) => sleep.as_mut().reset(at),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
        }
        self.armed = true;
    }

    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }

    /// Notes, before the open or the source is polled, whether the task has cooperative budget.
    pub(super) fn note_budget(&mut self) {
        self.had_budget = timed::budget_left();
    }

    /// Whether the armed timer has fired (registering the waker if not); never when unarmed.
    /// Polled outside the task's cooperative budget when the open or the source polled before it
    /// spent that budget (a source that filters an always-ready channel): inside it, the timer
    /// would never fire.
    pub(super) fn fired(&mut self, cx: &mut Context<'_>) -> bool {
        let spent = std::mem::take(&mut self.had_budget) && !timed::budget_left();
        match &mut self.sleep {
            Some(sleep) if self.armed => {
                let fired = timed::poll_timer(sleep.as_mut(), spent, cx).is_ready();
                if fired {
                    self.armed = false;
                }
                fired
            }
            _ => false,
        }
    }
}
