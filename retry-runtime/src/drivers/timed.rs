//! The one timed poll every driver uses: an attempt polled in its call's context, raced against
//! its time limit.
//!
//! A limit is a deadline, fixed when the attempt begins (as `tokio::time::timeout` fixes its
//! own); the tokio timer that enforces it is armed only when the attempt first answers
//! `Pending`. An attempt that is ready at its first poll, the common case of a fast dependency,
//! so never registers, reads or drops a timer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::task::coop;
use tokio::time::{Instant, Sleep};

use crate::engine::context::Slot;
use crate::engine::deadline::instant_after;
use crate::engine::state::Engine;

/// Points a driver's one timer (a retry's sleep, the next hedge) at `deadline`, reusing its
/// registration when it exists.
pub(crate) fn set_timer_at(mut timer: Pin<&mut Option<Sleep>>, deadline: Instant) {
    match timer.as_mut().as_pin_mut() {
        Some(sleep) => sleep.reset(deadline),
        None => timer.set(Some(tokio::time::sleep_until(deadline))),
    }
}

/// Points a driver's one timer at `now + delay` (as `tokio::time::sleep(delay)` would).
pub(crate) fn set_timer(timer: Pin<&mut Option<Sleep>>, delay: Duration) {
    set_timer_at(timer, instant_after(Instant::now(), delay));
}

/// Polls a timer, outside the task's cooperative budget when the future polled before it in
/// this poll `spent` that budget (an always-ready attempt): inside it, a timer polled after
/// such a future never fires.
#[inline]
pub(crate) fn poll_timer(timer: Pin<&mut Sleep>, spent: bool, cx: &mut Context<'_>) -> Poll<()> {
    if spent {
        std::pin::pin!(coop::unconstrained(timer)).poll(cx)
    } else {
        timer.poll(cx)
    }
}

pin_project! {
    /// An attempt's time limit: none, a deadline not yet armed, or the timer armed for it.
    #[project = LimitProj]
    pub(crate) enum Limit {
        /// The attempt runs as long as it takes.
        Unlimited,
        /// Cut at `deadline`; no timer yet (the attempt has not answered `Pending`).
        Due { deadline: Instant },
        /// Cut when `sleep` fires.
        Armed { #[pin] sleep: Sleep },
    }
}

impl Limit {
    /// A limit at `deadline`, if there is one.
    #[inline]
    pub(crate) fn at(deadline: Option<Instant>) -> Self {
        match deadline {
            Some(deadline) => Limit::Due { deadline },
            None => Limit::Unlimited,
        }
    }
}

/// Polls an attempt with `context()` naming its call (and, for a hedged call's copy, its
/// attempt `number`; 0: the engine's current attempt). `Ready(out)`: the attempt ended.
#[inline]
pub(crate) fn poll_in_context<F: Future>(
    engine: &Engine<'_>,
    number: u32,
    attempt: Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<F::Output> {
    let slot = Slot::of_copy(engine, number);
    let _entered = slot.enter();
    attempt.poll(cx)
}

/// Polls an attempt with `context()` naming its call, then, if it is `timed`, its time limit:
/// `arm` gives the limit's timer, armed now if it was not yet (it is called only when the
/// attempt answers `Pending`). `Ready(Some(out))`: the attempt ended; `Ready(None)`: the limit
/// passed first, and the engine notes that the attempt timed out (the driver drops the attempt
/// and makes its error).
///
/// The limit is polled after the attempt, as tokio's own `Timeout` does, and when the attempt
/// used up the task's cooperative budget in this poll (an always-ready channel, a busy stream),
/// outside the budget: otherwise it would answer `Pending` forever, and an attempt that never
/// yields for any other reason would never be cut.
#[inline]
pub(crate) fn poll_attempt<'t, F: Future>(
    engine: &Engine<'_>,
    attempt: Pin<&mut F>,
    timed: bool,
    arm: impl FnOnce() -> Option<Pin<&'t mut Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Option<F::Output>> {
    poll_attempt_as(engine, 0, attempt, timed, arm, cx)
}

/// As [`poll_attempt`], for the copy of a hedged call that is attempt `number` (0: the engine's
/// current attempt), which `context()` then reports; its timer, if any, is armed already.
#[inline]
pub(crate) fn poll_copy<F: Future>(
    engine: &Engine<'_>,
    number: u32,
    attempt: Pin<&mut F>,
    limit: Option<Pin<&mut Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Option<F::Output>> {
    poll_attempt_as(engine, number, attempt, limit.is_some(), || limit, cx)
}

#[inline]
fn poll_attempt_as<'t, F: Future>(
    engine: &Engine<'_>,
    number: u32,
    attempt: Pin<&mut F>,
    timed: bool,
    arm: impl FnOnce() -> Option<Pin<&'t mut Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Option<F::Output>> {
    let had_budget = timed && coop::has_budget_remaining();
    if let Poll::Ready(out) = poll_in_context(engine, number, attempt, cx) {
        return Poll::Ready(Some(out));
    }
    if !timed {
        return Poll::Pending;
    }
    match arm() {
        Some(sleep) => poll_limit(engine, sleep, had_budget, cx).map(|()| None),
        None => Poll::Pending,
    }
}

/// Whether the task has cooperative budget left, read before a timed attempt is polled (see
/// [`poll_attempt`]). Out of line and not generic: compiled once, rather than in every function
/// whose timed attempts a driver polls.
#[inline(never)]
pub(crate) fn budget_left() -> bool {
    coop::has_budget_remaining()
}

/// A timed attempt answered `Pending`: arms its limit's timer if it was not yet, and polls it
/// (`had_budget`: from [`budget_left`] before the attempt was polled). `Ready`: the limit passed,
/// and the engine notes that the attempt timed out. Out of line and not generic, as
/// [`budget_left`].
#[inline(never)]
pub(crate) fn limit(
    engine: &Engine<'_>,
    limit: Pin<&mut Limit>,
    had_budget: bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    match arm(limit) {
        Some(sleep) => poll_limit(engine, sleep, had_budget, cx),
        None => Poll::Pending,
    }
}

/// The timer of a [`Limit`], armed now if it was not yet.
#[inline]
pub(crate) fn arm(mut limit: Pin<&mut Limit>) -> Option<Pin<&mut Sleep>> {
    if let LimitProj::Due { deadline } = limit.as_mut().project() {
        let sleep = tokio::time::sleep_until(*deadline);
        limit.set(Limit::Armed { sleep });
    }
    match limit.project() {
        LimitProj::Armed { sleep } => Some(sleep),
        _ => None,
    }
}

/// The attempt answered `Pending`: polls its limit's timer. `Ready`: the limit passed, and the
/// engine notes that the attempt timed out. Not generic: compiled once for every driver.
#[inline(never)]
fn poll_limit(
    engine: &Engine<'_>,
    sleep: Pin<&mut Sleep>,
    had_budget: bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    let expired = poll_timer(sleep, had_budget && !coop::has_budget_remaining(), cx);
    if expired.is_ready() {
        engine.mark_timed_out();
    }
    expired
}
