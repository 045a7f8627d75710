//! What a driver does with a fault injected into an attempt (feature `testing`).

use tokio::time::Instant;

use crate::engine::state::{Engine, Fault};

/// The fault of the attempt just begun, if the policy injects one (see [`Fault`]): `None` at
/// once without feature `testing`.
#[inline]
pub(crate) fn fault(engine: &Engine<'_>) -> Option<Fault> {
    engine.draw_fault()
}

/// What a driver does with a [`Fault`] drawn for an attempt that began with time limit
/// `deadline` (`can_fail`: whether the driver can turn a timeout into the call's error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultPlan {
    /// Make the attempt as usual.
    Run,
    /// Wait until `until`, then do `then` (see [`after_fault_wait`]).
    Wait { until: Instant, then: AfterWait },
    /// Fail the attempt now with this (the engine noted a timeout).
    Fail(crate::Elapsed),
}

/// What follows a fault's wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterWait {
    /// An injected error.
    Fail,
    /// The attempt's own time limit came first: it times out, unpolled.
    TimeOut,
    /// Make the attempt, under its time limit (fixed when it began).
    Run(Option<Instant>),
}

/// Plans a drawn fault (see [`Fault`]): the latency is waited first, capped at the attempt's
/// `deadline`; an injected error needs `can_fail`, else it is a latency only.
#[cold]
pub(crate) fn plan_fault(
    engine: &Engine<'_>,
    fault: Fault,
    deadline: Option<Instant>,
    can_fail: bool,
) -> FaultPlan {
    if !can_fail {
        engine.fault_as_latency(fault.latency.is_some());
    }
    let error = fault.error && can_fail;
    let Some(latency) = fault.latency else {
        return if error {
            engine.mark_timed_out();
            FaultPlan::Fail(crate::Elapsed::injected())
        } else {
            FaultPlan::Run
        };
    };
    let end = crate::engine::deadline::instant_after(Instant::now(), latency);
    match deadline {
        Some(d) if d <= end => FaultPlan::Wait {
            until: d,
            then: if error {
                AfterWait::Fail
            } else {
                AfterWait::TimeOut
            },
        },
        _ => FaultPlan::Wait {
            until: end,
            then: if error {
                AfterWait::Fail
            } else {
                AfterWait::Run(deadline)
            },
        },
    }
}

/// A fault's wait is over: the attempt's failure (`Some`, the engine noting a timeout), or
/// `None` to make it.
#[cold]
pub(crate) fn after_fault_wait(engine: &Engine<'_>, then: AfterWait) -> Option<crate::Elapsed> {
    match then {
        AfterWait::Fail => {
            engine.mark_timed_out();
            Some(crate::Elapsed::injected())
        }
        AfterWait::TimeOut => {
            engine.mark_timed_out();
            Some(crate::Elapsed::new())
        }
        AfterWait::Run(_) => None,
    }
}
