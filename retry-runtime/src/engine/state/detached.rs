//! A call's state kept without its policy, between the polls of a driver that owns its policy.

use std::cell::Cell;

use tokio::time::Instant;

use super::engine::Engine;
use crate::engine::instant_slot::InstantSlot;
use crate::engine::spans::Spans;
use crate::schedule::delays::Schedule;
use crate::schedule::policy::RetryPolicy;

/// A call's state without its policy: what a driver that owns its policy (behind an `Arc`, as
/// the tower layer does, whose futures must not borrow the layer) keeps between polls. Each poll
/// [`attach`](Detached::attach)es it to the policy, and [`Engine::detach`] puts it back.
#[derive(Debug, Default)]
pub struct Detached {
    attempt: Cell<u32>,
    start: InstantSlot,
    key: Cell<[u64; 2]>,
    schedule: Schedule,
    attempt_deadline: Cell<Option<Instant>>,
    #[cfg(feature = "testing")]
    injected: Cell<Option<crate::testing::InjectedFault>>,
    /// The call's number among the calls through its policy's fault injection, from its first
    /// draw (feature `testing`): its attempts draw from it.
    #[cfg(feature = "testing")]
    fault_call: Cell<Option<u64>>,
    spans: Spans,
}

impl Detached {
    /// The state of a call that has made no attempt yet, as [`Engine::new`] makes it.
    #[inline]
    pub fn new() -> Self {
        Detached::default()
    }

    /// The engine of this call under `policy` (always the same policy for one call).
    #[inline]
    pub fn attach(self, policy: &RetryPolicy) -> Engine<'_> {
        Engine {
            policy,
            attempt: self.attempt,
            start: self.start,
            key: self.key,
            schedule: self.schedule,
            attempt_deadline: self.attempt_deadline,
            #[cfg(feature = "testing")]
            injected: self.injected,
            #[cfg(feature = "testing")]
            fault_call: self.fault_call,
            spans: self.spans,
        }
    }
}

impl Engine<'_> {
    /// This call's state, to keep without borrowing the policy (see [`Detached`]).
    #[inline]
    pub fn detach(self) -> Detached {
        Detached {
            attempt: self.attempt,
            start: self.start,
            key: self.key,
            schedule: self.schedule,
            attempt_deadline: self.attempt_deadline,
            #[cfg(feature = "testing")]
            injected: self.injected,
            #[cfg(feature = "testing")]
            fault_call: self.fault_call,
            spans: self.spans,
        }
    }
}
