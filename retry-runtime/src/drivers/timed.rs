//! The one timed poll every driver uses: an attempt polled in its call's context, raced against
//! its time limit.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::coop;
use tokio::time::Sleep;

use crate::engine::context::Enter;
use crate::engine::state::Engine;

/// Polls an attempt with `context()` naming its call, then its time limit if it has one.
/// `Ready(Some(out))`: the attempt ended; `Ready(None)`: the limit passed first, and the engine
/// notes that the attempt timed out (the driver drops the attempt and makes its error).
///
/// The limit is polled after the attempt, as tokio's own `Timeout` does, and when the attempt
/// used up the task's cooperative budget in this poll (an always-ready channel, a busy stream),
/// outside the budget: otherwise it would answer `Pending` forever, and an attempt that never
/// yields for any other reason would never be cut.
#[inline]
pub(crate) fn poll_attempt<F: Future>(
    engine: &Engine<'_>,
    attempt: Pin<&mut F>,
    limit: Option<Pin<&mut Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Option<F::Output>> {
    poll_copy(engine, 0, attempt, limit, cx)
}

/// As [`poll_attempt`], for the copy of a hedged call that is attempt `number` (0: the engine's
/// current attempt), which `context()` then reports.
#[inline]
pub(crate) fn poll_copy<F: Future>(
    engine: &Engine<'_>,
    number: u32,
    attempt: Pin<&mut F>,
    limit: Option<Pin<&mut Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Option<F::Output>> {
    let had_budget = limit.is_some() && coop::has_budget_remaining();
    {
        let _current = Enter::copy(engine, number);
        if let Poll::Ready(out) = attempt.poll(cx) {
            return Poll::Ready(Some(out));
        }
    }
    let Some(limit) = limit else {
        return Poll::Pending;
    };
    let expired = if had_budget && !coop::has_budget_remaining() {
        std::pin::pin!(coop::unconstrained(limit)).poll(cx)
    } else {
        limit.poll(cx)
    };
    if expired.is_ready() {
        engine.mark_timed_out();
        Poll::Ready(None)
    } else {
        Poll::Pending
    }
}
