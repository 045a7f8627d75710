//! Fault injection's draw for an attempt just begun (feature `testing`).

use std::time::Duration;

use super::engine::Engine;

// Here, where the engine draws it (`Engine::draw_fault`), below the steps that plan it.
/// What fault injection (feature `testing`) makes of an attempt just begun: see
/// [`FaultInjection`](crate::testing::FaultInjection). Every driver handles it the same way: it
/// waits `latency` (if any) before anything else; then, with `error`, it does not make the
/// attempt, and the attempt fails with its timeout conversion of `Elapsed::injected()` (noted as
/// a timeout: `Engine::mark_timed_out`); without, it makes the attempt, whose time limit (fixed
/// when the attempt began) the latency counts against. A driver without a timeout conversion
/// injects the latency only.
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The latency added before the attempt (or its injected error).
    pub(crate) latency: Option<Duration>,
    /// The attempt is not made: it fails with an injected error.
    pub(crate) error: bool,
}

impl Engine<'_> {
    /// Draws the fault of the attempt just begun from the policy's fault injection (feature
    /// `testing`), and notes it for the decision that counts it. `None` (at once, without
    /// `testing`, or without the setting: one branch) when the attempt runs untouched.
    #[cfg(feature = "testing")]
    #[inline]
    pub(crate) fn draw_fault(&self) -> Option<Fault> {
        match &self.policy.faults {
            Some(faults) => self.draw_fault_from(faults),
            None => None,
        }
    }

    #[cfg(feature = "testing")]
    #[cold]
    #[inline(never)]
    fn draw_fault_from(&self, faults: &crate::testing::faults::Faults) -> Option<Fault> {
        use crate::testing::InjectedFault;
        let kind = faults.next(&self.fault_call, self.attempt())?;
        let latency = faults.setting.latency().filter(|d| !d.is_zero());
        if kind == InjectedFault::Latency && latency.is_none() {
            // No latency to add: the attempt runs untouched, and nothing is injected.
            return None;
        }
        self.injected.set(Some(kind));
        Some(Fault {
            latency,
            error: kind == InjectedFault::Error,
        })
    }

    /// Notes that the fault drawn for the attempt running now was made a latency only (a driver
    /// that cannot convert an injected error into the call's error): counted as one if there is
    /// a latency to add, else not at all.
    #[cfg(feature = "testing")]
    pub(crate) fn fault_as_latency(&self, has_latency: bool) {
        if self.injected.get().is_some() {
            self.injected
                .set(has_latency.then_some(crate::testing::InjectedFault::Latency));
        }
    }

    /// The fault injected into the attempt just ended, if any, forgotten (it is counted once).
    #[cfg(feature = "testing")]
    #[inline]
    pub(crate) fn take_injected(&self) -> Option<crate::testing::InjectedFault> {
        self.injected.take()
    }
}
