//! What follows a failed attempt, by the rules: stop with a reason, or sleep this long and retry.

use std::time::Duration;

use tokio::time::Instant;

use super::engine::{Engine, earliest};
use super::word::{LINGERING, paid_for};
use crate::HintMode;
use crate::engine::deadline::instant_after;
use crate::engine::give_up::GiveUpReason;
use crate::guards::budget::RetryBudget;

/// What follows an attempt: stop with an outcome, or sleep and retry. The engine's rules stop
/// with a [`GiveUpReason`]; a call stops with its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<R> {
    /// Sleep this long, then make the next attempt.
    Retry(Duration),
    /// Stop: hand this to the caller (or to `#[recover]`).
    Stop(R),
}

impl Engine<'_> {
    /// Notes that the circuit breaker rejected the next attempt (the call ends without it). A
    /// call whose first attempt was rejected starts its clock here when the policy has
    /// `max_elapsed`, as that attempt would have: what runs after it in the call's context (the
    /// `#[recover]` fallback) is bounded by the call's deadline whatever happened to the attempts.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().max_elapsed(Duration::from_secs(1)).build().unwrap();
    /// let engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.rejected(|| now);
    /// assert_eq!(engine.deadline(), Some(now + Duration::from_secs(1)));
    /// ```
    pub fn rejected(&self, now: impl FnOnce() -> Instant) {
        if self.policy.max_elapsed.is_some() {
            self.start_or(now);
        }
    }

    /// Whether the one-layer rule keeps this call from retrying the attempt that just ended: its
    /// policy sets [`one_layer`](crate::RetryPolicyBuilder::one_layer), it has attempts left,
    /// and `outer_retries` (an enclosing retrying call still has attempts left after the one it
    /// is making). Then the call gives up with [`GiveUpReason::OuterRetries`].
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().one_layer(true).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// retry_runtime::__private::begin(&mut engine, false);
    /// assert!(engine.defers_to_outer(true));
    /// assert!(!engine.defers_to_outer(false), "the outer call is on its last attempt");
    /// ```
    #[inline]
    pub fn defers_to_outer(&self, outer_retries: bool) -> bool {
        self.policy.one_layer && outer_retries && self.attempt() < self.policy.max_attempts
    }

    /// Decides what follows a failed attempt (an error, or an `Ok` value the caller retries),
    /// with neither an inherited deadline nor a budget; see
    /// [`after_failure_within`](Self::after_failure_within).
    pub fn after_failure(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        now: Instant,
    ) -> Decision<GiveUpReason> {
        self.after_failure_within(retryable, hint, now, None, None)
    }

    /// Whether a sleep of `delay` from `now` ends before the call's deadline and an enclosing
    /// call's (`inherited`): no sleep of the call ends at or past either.
    #[inline]
    pub(crate) fn wakes_in_time(
        &self,
        now: Instant,
        delay: Duration,
        inherited: Option<Instant>,
    ) -> bool {
        earliest(self.deadline(), inherited)
            .is_none_or(|deadline| now.checked_add(delay).is_some_and(|w| w < deadline))
    }

    /// Decides what follows a failed attempt (an error, or an `Ok` value the caller retries).
    ///
    /// `retryable` says whether the outcome is one to retry; `hint` is a server's requested delay
    /// (Retry-After), a floor under the computed (jittered) delay: the sleep is the larger of the
    /// two, so a zero or past hint never sends every client back at once. The call never comes
    /// back before the server allows: a hint beyond `max_delay`, or one whose wait would end at
    /// or past the deadline, ends the call ([`GiveUpReason::RetryAfterTooLong`]). Under
    /// [`HintMode::Clamp`] (the policy's `hint_mode`) the hint is clamped to the computed delay
    /// plus the mode's margin instead, and `max_delay` does not bound it. A retry is also
    /// refused when attempts are exhausted or when the sleep would end at or past the deadline
    /// (the call's own, or `inherited_deadline`, an enclosing call's). A retry that is otherwise
    /// allowed must be paid from `budget` (its `timeout_cost` after an attempt that
    /// [timed out](Self::timed_out)); nothing is withdrawn when the call gives up for another
    /// reason. When the budget alone refuses, a long-polling policy's call still waits the
    /// retry's delay before it returns ([`linger`](Self::linger)).
    ///
    /// ```
    /// use tokio::time::Instant;
    /// use reattempt::{GiveUpReason, RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::{Decision, Engine};
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.begin(false, || now, None);
    /// let decision = engine.after_failure_within(true, None, now, None, Some(&budget));
    /// assert!(matches!(decision, Decision::Retry(_)));
    /// assert_eq!(budget.available(), 95);
    /// engine.begin(false, || now, None);
    /// engine.succeeded(&budget); // the retry worked: its 5 tokens come back
    /// assert_eq!(budget.available(), 100);
    /// ```
    pub fn after_failure_within(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        now: Instant,
        inherited_deadline: Option<Instant>,
        budget: Option<&RetryBudget>,
    ) -> Decision<GiveUpReason> {
        self.after_failure_chosen(
            retryable,
            hint,
            |_, _| None,
            now,
            inherited_deadline,
            budget,
        )
    }

    /// As [`after_failure_within`](Self::after_failure_within), with the delay `choose`n from
    /// the attempt that failed and the schedule's delay (`delay_for`): `Some` replaces the
    /// schedule's delay, bounded by `max_delay`; the hint is still a floor under it, and the
    /// deadline still ends the call before a delay it cannot wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use reattempt::{Jitter, RetryPolicy};
    /// use retry_runtime::__private::{Decision, Engine};
    ///
    /// let ms = Duration::from_millis;
    /// let policy = RetryPolicy::builder().jitter(Jitter::None).max_delay(ms(500)).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.begin(false, || now, None);
    /// let chosen = engine.after_failure_chosen(true, None, |attempt, computed| Some(computed * 3 + ms(attempt.into())), now, None, None);
    /// assert_eq!(chosen, Decision::Retry(ms(301)));
    /// engine.begin(false, || now, None);
    /// let capped = engine.after_failure_chosen(true, Some(ms(50)), |_, _| Some(ms(9000)), now, None, None);
    /// assert_eq!(capped, Decision::Retry(ms(500)), "bounded by max_delay");
    /// ```
    pub fn after_failure_chosen(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        choose: impl FnOnce(u32, Duration) -> Option<Duration>,
        now: Instant,
        inherited_deadline: Option<Instant>,
        budget: Option<&RetryBudget>,
    ) -> Decision<GiveUpReason> {
        self.after_failure_ruled(
            retryable,
            hint,
            choose,
            now,
            (inherited_deadline, budget),
            true,
        )
    }

    /// As [`after_failure_chosen`](Self::after_failure_chosen), for a hedged call's copy that
    /// failed while others are in flight: a refused retry does not end the call (the others may
    /// answer), so it never lingers, and what the last retry paid stays noted for a success.
    pub(crate) fn after_failure_alongside(
        &mut self,
        hint: Option<Duration>,
        choose: impl FnOnce(u32, Duration) -> Option<Duration>,
        now: Instant,
        inherited_deadline: Option<Instant>,
        budget: Option<&RetryBudget>,
    ) -> Decision<GiveUpReason> {
        self.after_failure_ruled(true, hint, choose, now, (inherited_deadline, budget), false)
    }

    /// The rules of [`after_failure_chosen`](Self::after_failure_chosen); `may_linger`: a give-up
    /// ends the call, so a long-polling policy's wait applies.
    fn after_failure_ruled(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        choose: impl FnOnce(u32, Duration) -> Option<Duration>,
        now: Instant,
        (inherited_deadline, budget): (Option<Instant>, Option<&RetryBudget>),
        may_linger: bool,
    ) -> Decision<GiveUpReason> {
        self.start_or(|| now);
        if !retryable {
            return Decision::Stop(GiveUpReason::NotRetryable);
        }
        if self.attempt() >= self.policy.max_attempts {
            return Decision::Stop(GiveUpReason::Exhausted);
        }
        let class = self.class();
        let scheduled =
            self.schedule
                .next(self.attempt(), self.policy, self.policy.base_delay(class));
        let computed = choose(self.attempt(), scheduled)
            .map_or(scheduled, |chosen| chosen.min(self.policy.max_delay));
        let delay = match (hint, self.policy.hint_mode) {
            (None, _) => computed,
            (Some(h), HintMode::Floor) if h > self.policy.max_delay => {
                return Decision::Stop(GiveUpReason::RetryAfterTooLong);
            }
            // A clamped hint is bounded by the schedule's delay, not by `max_delay`.
            (Some(h), mode) => mode.wait(computed, h),
        };
        if !self.wakes_in_time(now, delay, inherited_deadline) {
            // The hint is to blame when it is what sets the wait.
            let reason = if hint.is_some_and(|h| h >= computed) {
                GiveUpReason::RetryAfterTooLong
            } else {
                GiveUpReason::DeadlineReached
            };
            return Decision::Stop(reason);
        }
        if let Some(budget) = budget {
            if !budget.try_withdraw_for(class) {
                if may_linger && self.policy.long_polling {
                    // Only the budget refused: the retry's backoff is still waited (`linger`).
                    self.attempt_deadline.set(Some(instant_after(now, delay)));
                    self.set_paid(LINGERING);
                }
                return Decision::Stop(GiveUpReason::BudgetExhausted);
            }
            self.set_paid(paid_for(class));
        }
        Decision::Retry(delay)
    }

    /// When a call that just gave up may return, if it must wait first: a long-polling policy
    /// ([`long_polling`](crate::RetryPolicyBuilder::long_polling)) whose retry only the budget
    /// refused waits the backoff that retry would have used (`None` otherwise: return at once).
    /// Asked by a driver when the decision is to stop; read once (it forgets the wait).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use reattempt::{GiveUpReason, Jitter, RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::{Decision, Engine};
    ///
    /// let policy = RetryPolicy::builder().jitter(Jitter::None).long_polling(true).build().unwrap();
    /// let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.begin(false, || now, None);
    /// let decision = engine.after_failure_within(true, None, now, None, Some(&empty));
    /// assert_eq!(decision, Decision::Stop(GiveUpReason::BudgetExhausted));
    /// assert_eq!(engine.linger(), Some(now + Duration::from_millis(100)));
    /// assert_eq!(engine.linger(), None, "read once");
    /// ```
    #[inline]
    pub fn linger(&self) -> Option<Instant> {
        if self.paid() != LINGERING {
            return None;
        }
        self.set_paid(0);
        self.attempt_deadline.take()
    }
}
