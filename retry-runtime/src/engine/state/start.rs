//! When an attempt begins: the clock it starts, the time limit it gets, or whether it is not
//! made at all (no time left).

use std::time::Duration;

use tokio::time::Instant;

use super::engine::{Engine, earliest};
use super::word::{CLASS_MASK, FLAG_BITS, NOT_MADE, ONE_ATTEMPT};
use crate::schedule::policy::RetryPolicy;

/// How the next attempt starts, per [`Engine::begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Make the attempt, cut after this long if `Some` (the policy's `timeout`, clipped to what
    /// remains before the deadline).
    Run(Option<Duration>),
    /// No time remains before the deadline: the attempt is not made, and the call ends
    /// ([`GiveUpReason::DeadlineReached`](crate::GiveUpReason::DeadlineReached)).
    NotMade,
}

impl Engine<'_> {
    /// Starts the next attempt, as the rules say: the call's clock starts with its first attempt
    /// when the policy has `max_elapsed`; a `timed` attempt gets the policy's `timeout`, clipped
    /// to what remains before the earlier of the call's deadline and `inherited_deadline` (the
    /// deadline of the calls this one is nested in); and when no time remains at all, the attempt
    /// is not made ([`Start::NotMade`]), so that the body is never polled past the deadline.
    /// An attempt that is not timed (no `timeout`) always runs: `max_elapsed` then bounds only
    /// the sleeps. `now` is read at most once, and only when a deadline needs it.
    #[inline]
    pub fn begin(
        &mut self,
        timed: bool,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> Start {
        if self.policy.max_elapsed.is_none() && (!timed || inherited_deadline.is_none()) {
            // No deadline that bears on this attempt: no clock, and the limit is the policy's
            // `timeout` as it stands.
            self.begin_attempt();
            return match self.policy.timeout.filter(|_| timed) {
                Some(Duration::ZERO) => self.not_made_now(),
                limit => Start::Run(limit),
            };
        }
        self.begin_under_deadline(timed, now, inherited_deadline)
    }

    /// [`begin`](Self::begin) with a deadline, the call's own or an inherited one.
    fn begin_under_deadline(
        &mut self,
        timed: bool,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> Start {
        let (mut clock, mut read) = (Some(now), None);
        let mut now =
            || *read.get_or_insert_with(|| clock.take().map_or_else(Instant::now, |f| f()));
        if self.attempt() == 0 && self.policy.max_elapsed.is_some() {
            self.start_or(&mut now);
        }
        self.begin_attempt();
        let limit = if timed {
            self.attempt_timeout_within(now, inherited_deadline)
        } else {
            None
        };
        if limit == Some(Duration::ZERO) {
            self.not_made_now()
        } else {
            Start::Run(limit)
        }
    }

    /// The attempt just begun is not made: no time remains.
    #[cold]
    fn not_made_now(&self) -> Start {
        self.attempt.set(self.attempt.get() | NOT_MADE);
        Start::NotMade
    }

    /// Whether the next attempt would be made if it began now: `false` only for a `timed`
    /// attempt with no time left before the earlier of the call's deadline and
    /// `inherited_deadline` (see [`begin`](Self::begin)). Asked before the circuit breaker, so
    /// that an attempt that cannot be made takes no permit and is not rejected: it ends the call
    /// as `DeadlineReached`. `now` is read only when a deadline needs it.
    pub fn would_run(
        &self,
        timed: bool,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> bool {
        if !timed || self.policy.timeout.is_none() {
            return true;
        }
        let unstarted = self.start.get().is_none() && self.policy.max_elapsed.is_some();
        if !unstarted && earliest(self.deadline(), inherited_deadline).is_none() {
            return true;
        }
        let now = now();
        // A call whose clock has not started starts it with this attempt.
        let own = if unstarted {
            self.policy
                .max_elapsed
                .and_then(|limit| now.checked_add(limit))
        } else {
            self.deadline()
        };
        earliest(own, inherited_deadline).is_none_or(|deadline| deadline > now)
    }

    /// Starts the next attempt, untimed, of a call whose clock has started if its policy needs
    /// one (see starting the clock when the policy has `max_elapsed`, as the first [`begin`](Self::begin) would): as [`begin`](Self::begin) then does, with
    /// nothing to check. Gives the attempt's number (1-based).
    #[inline]
    pub(crate) fn begin_untimed_started(&mut self) -> u32 {
        debug_assert!(self.policy.max_elapsed.is_none() || self.start.get().is_some());
        // The drivers that call this begin an attempt only below `max_attempts` (the first, or
        // after a `Retry`), which is at most `MAX_ATTEMPTS`: the counter cannot overflow, so the
        // addition needs no test (this runs after the guards' admission, whose out-of-line
        // paths keep the compiler from knowing the counter of a call's first attempt).
        debug_assert!(self.attempt() < RetryPolicy::MAX_ATTEMPTS);
        // The flags of the attempt that ended are clear already: these drivers begin an attempt
        // first on a fresh engine, then only after a `Retry`, which forgets them (see
        // `Call::decide`). The attempt then begins with one addition to the word where it lies.
        debug_assert_eq!(self.attempt.get() & (CLASS_MASK | NOT_MADE), 0);
        let next = self.attempt.get().wrapping_add(ONE_ATTEMPT);
        self.attempt.set(next);
        self.spans.attempt_began(next >> FLAG_BITS);
        next >> FLAG_BITS
    }

    /// Marks the start of the next attempt and gives its number (1-based).
    #[inline]
    pub(super) fn begin_attempt(&mut self) -> u32 {
        // A new attempt: the flags of the last one are gone, what the budget paid stays, and the
        // counter saturates at 2^26 - 1.
        let kept = self.attempt.get() & !(CLASS_MASK | NOT_MADE);
        let next = kept.checked_add(ONE_ATTEMPT).unwrap_or(kept);
        self.attempt.set(next);
        self.spans.attempt_began(next >> FLAG_BITS);
        next >> FLAG_BITS
    }

    /// The time limit for the attempt about to start: `timeout`, clipped to what remains before
    /// the deadline. `None` when the policy has no `timeout` (then `max_elapsed` limits only the
    /// sleeps: an attempt is never cut short without a `timeout`). `now` is read only when both
    /// are set.
    pub fn attempt_timeout(&self, now: impl FnOnce() -> Instant) -> Option<Duration> {
        self.attempt_timeout_within(now, None)
    }

    /// As [`attempt_timeout`](Self::attempt_timeout), under an inherited deadline too.
    pub fn attempt_timeout_within(
        &self,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> Option<Duration> {
        let timeout = self.policy.timeout?;
        Some(match earliest(self.deadline(), inherited_deadline) {
            Some(deadline) => timeout.min(deadline.saturating_duration_since(now())),
            None => timeout,
        })
    }
}
