//! An attempt begins: its time limit under the enclosing calls' deadline, or not made.

use std::cell::Cell;

use tokio::time::Instant;

use crate::engine::context;
use crate::engine::deadline::deadline_after;
use crate::engine::state::{Engine, Start};

/// Starts the next attempt now, under the deadline of the calls this one is nested in (see
/// [`Engine::begin`]). `timed`: whether the driver can cut the attempt (an `async` attempt whose
/// error can hold a timeout).
#[inline]
pub fn begin(engine: &mut Engine<'_>, timed: bool) -> Start {
    engine.begin(timed, Instant::now, inherited_for(timed))
}

/// The enclosing calls' deadline, looked up only for a timed attempt, whose limit is clipped to
/// it (an untimed attempt always runs, whatever the deadlines).
#[inline]
pub(super) fn inherited_for(timed: bool) -> Option<Instant> {
    if timed {
        context::inherited_deadline()
    } else {
        None
    }
}

/// As [`begin`], for a timed attempt: also gives the attempt's deadline when it has a time limit
/// (`None` when it has none, or one too far to represent). The clock is read once, and only
/// for a limit: the reading that clips the limit to a deadline is the one the limit starts from.
#[inline]
pub(crate) fn begin_timed(engine: &mut Engine<'_>) -> Result<Option<Instant>, NotMade> {
    let read = Cell::new(None);
    let now = || {
        let now = Instant::now();
        read.set(Some(now));
        now
    };
    match engine.begin(true, now, inherited_for(true)) {
        Start::Run(None) => Ok(None),
        Start::Run(Some(limit)) => {
            let start = read.get().unwrap_or_else(Instant::now);
            let deadline = deadline_after(start, limit);
            engine.note_attempt_deadline(deadline);
            Ok(deadline)
        }
        Start::NotMade => Err(NotMade),
    }
}

/// No time remained to make the attempt ([`Start::NotMade`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NotMade;
