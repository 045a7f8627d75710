//! The copies of a hedged call: what follows one copy's outcome while others are in flight, and
//! when another may start alongside.

use std::fmt::Debug;
use std::time::Duration;

use tokio::time::Instant;

use super::admit::admit;
use super::begin::begin;
use super::decide::{
    OkVerdict, accepted, decide_inner, first_attempt_ended, judge_error, keep, kept_over, ok_class,
    ok_failed, ok_refused, ok_verdict, refusal, reported,
};
use crate::HintMode;
use crate::classify::effect;
use crate::engine::context::{self, RetryContext};
use crate::engine::events::{self, CallName, Logged};
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::Hooks;
use crate::engine::state::{self, Decision, Engine, Start};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admitted, Guards};

/// What follows the outcome of one copy of a hedged call (see [`decide_copy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyDecision<R> {
    /// The call is over, with this result.
    Stop(R),
    /// Start the next attempt after this long (the other copies go on meanwhile).
    Retry(Duration),
    /// No retry follows this outcome, but other copies are still in flight: wait for them.
    Wait,
}

/// What follows the outcome of one copy of a hedged call, `others` telling whether other copies
/// are still in flight.
///
/// Without others, the rules of [`decide`](fn@super::decide). With others: an accepted `Ok` ends the call (the
/// others are dropped by the driver); a non-retryable error ends the call; a retryable error (or
/// an `Ok` that `retry_if_ok` retries) leads to a retry after the usual backoff (no earlier than
/// its hint, `retry_after` or `retry_after_ok`, as in [`decide`](fn@super::decide)) when one is
/// allowed (attempts left, deadline, budget), and otherwise to [`CopyDecision::Wait`]: the
/// copies in flight may still answer, and the call gives up only when the last one failed.
///
/// ```
/// use reattempt::{FnHooks, RetryPolicy};
/// use retry_runtime::__private::{CopyDecision, Engine, Guards, begin, decide_copy};
///
/// let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
/// let mut engine = Engine::new(&policy);
/// begin(&mut engine, false);
/// begin(&mut engine, false); // a hedge: both attempts are in flight
/// let outcome: Result<u8, &str> = Err("busy");
/// let mut hooks = FnHooks::of(&outcome);
/// // Attempts are exhausted, but the other copy may still answer.
/// assert_eq!(decide_copy(&mut engine, "demo", &mut hooks, outcome, Guards::NONE, true), CopyDecision::Wait);
/// ```
pub fn decide_copy<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    others: bool,
) -> CopyDecision<Result<T, E>> {
    decide_copy_pending(engine, name, hooks, outcome, guards, others, false, None, 0)
}

/// As [`decide_copy`], and `retry_pending`: a retry is already decided and waits for its backoff
/// (an earlier copy's failure). Then a retryable failure buys no second retry (the call has one
/// timer, and that retry is the one this failure would start): it is recorded as made and
/// failed, nothing is paid, no `on_retry`, and the call goes on to the retry already due
/// ([`CopyDecision::Wait`]), or, when the failure carries a hint within `max_delay` and the
/// call's deadline, to that
/// retry no earlier than the hint ([`CopyDecision::Retry`]: the driver keeps the later start).
/// A non-retryable failure ends the call, and the retry it will not make is refunded to the
/// budget (an attempt never made costs nothing).
///
/// `number` is the copy's own attempt (0: the engine's current one): a retry it leads to is
/// reported (`on_retry`'s context, the retry event) as that attempt's, not the newest copy's.
#[allow(
    clippy::too_many_arguments,
    reason = "the copy's outcome and the call's state"
)]
pub(crate) fn decide_copy_pending<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    others: bool,
    retry_pending: bool,
    last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> CopyDecision<Result<T, E>> {
    #[cfg(feature = "spans")]
    let failed = outcome.is_err();
    #[cfg(feature = "spans")]
    if engine.spans.active() {
        crate::engine::spans::forget_notes();
    }
    let decision = copy_outcome(
        engine,
        name,
        hooks,
        outcome,
        guards,
        others,
        retry_pending,
        last,
        number,
    );
    #[cfg(feature = "spans")]
    if engine.spans.active() {
        use super::decide::spans::{Next, copy_decided};
        let next = match &decision {
            CopyDecision::Retry(delay) => Next::Retry(*delay),
            CopyDecision::Stop(Ok(_)) => Next::Answered,
            CopyDecision::Stop(Err(_)) => Next::Failed,
            CopyDecision::Wait => Next::Wait,
        };
        copy_decided::<T, E, _>(engine, name, number, failed, next);
    }
    decision
}

/// The rules of [`decide_copy_pending`], the spans told apart (feature `spans`).
#[allow(
    clippy::too_many_arguments,
    reason = "the copy's outcome and the call's state"
)]
#[inline]
fn copy_outcome<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    others: bool,
    retry_pending: bool,
    last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> CopyDecision<Result<T, E>> {
    let to_copy = |d: Decision<Result<T, E>>| match d {
        Decision::Stop(r) => CopyDecision::Stop(r),
        Decision::Retry(d) => CopyDecision::Retry(d),
    };
    if !others && !retry_pending {
        return to_copy(decide_inner(
            engine, name, hooks, outcome, guards, last, number,
        ));
    }
    first_attempt_ended(engine, guards.budget_ref(), number);
    // A failure that leads to a retry (or waits for one) is the call's last real outcome, which
    // a retry the breaker or the throttle turns away ends the call with (`decide_keeping`), and
    // which a later outcome that is not the dependency's doing (`Hooks::counts_as_failure`)
    // never replaces: a copy the client itself could not send does not end a call with its own
    // made-up error while a real one is kept (see `kept_over`).
    let mut counted = true;
    // A retried `Ok`'s hint (its `Retry-After`), read before the value is dropped.
    let mut ok_hint = None;
    // What the retried error's attempt may have done, for the retry event.
    let mut seen = effect::Effect::Unstated;
    let retried = match outcome {
        // Asked once: the request-aware hooks of the HTTP clients see each outcome once.
        Ok(value)
            if !hooks.retries_ok() || ok_verdict(engine, hooks, &value) == OkVerdict::Accept =>
        {
            return to_copy(accepted(engine, name, hooks, value, guards));
        }
        Ok(value) if ok_refused() => {
            events::attempt_made(name);
            if retry_pending && let Some(budget) = guards.budget_ref() {
                engine.unmade(budget);
            }
            return to_copy(ok_failed(
                engine,
                name.name(),
                value,
                guards,
                GiveUpReason::UnknownOutcome,
            ));
        }
        Ok(value) => {
            events::attempt_made(name);
            guards.record(false);
            engine.note_class(ok_class());
            ok_hint = hooks.retry_after_ok(&value);
            Ok(value)
        }
        Err(error) => {
            events::attempt_made(name);
            let ((retryable, class), verdict) = judge_error(engine, hooks, &error);
            engine.note_class(class);
            if !retryable {
                guards
                    .record(!engine.timed_out() && !verdict.refused && !hooks.error_failed(&error));
                // The retry already decided will not be made: what it was paid comes back.
                if retry_pending && let Some(budget) = guards.budget_ref() {
                    engine.unmade(budget);
                }
                let logged = Logged::new(&error, engine.policy().log_error);
                events::giving_up(
                    name.name(),
                    engine.attempt(),
                    refusal(GiveUpReason::NotRetryable, verdict),
                    Some(logged),
                );
                return CopyDecision::Stop(Err(error));
            }
            seen = verdict.effect;
            counted = hooks.counts_as_failure(&error);
            if counted {
                guards.record(false);
            } else {
                // Not the dependency's doing (`Hooks::counts_as_failure`): neither a failure nor
                // a success, as a cancelled copy.
                guards.cancelled();
            }
            Err(error)
        }
    };
    // The hooks refused any further attempt (`Hooks::retry_refused`): the copies in flight still
    // answer, and nothing more starts; with none in flight, the call ends with this outcome, and
    // a retry already decided (paid) is not made.
    if let Some(reason) = hooks.retry_refused() {
        if others {
            keep(last, retried, counted);
            return CopyDecision::Wait;
        }
        if retry_pending && let Some(budget) = guards.budget_ref() {
            engine.unmade(budget);
        }
        let logged = retried
            .as_ref()
            .err()
            .map(|e| Logged::new(e, engine.policy().log_error));
        events::giving_up(name.name(), engine.attempt(), reason, logged);
        return CopyDecision::Stop(kept_over(last, retried, counted));
    }
    let decision = after_copy_failure(
        engine,
        name.name(),
        hooks,
        retried.as_ref().err().map(|e| (e, seen)),
        ok_hint,
        guards,
        retry_pending,
        number,
    );
    keep(last, retried, counted);
    decision
}

/// The rest of [`decide_copy_pending`], for a retryable failure (`error`, or a retried `Ok` with
/// its hint `ok_hint`) while other copies are in flight or a retry is pending.
#[allow(
    clippy::too_many_arguments,
    reason = "the copy's outcome and the call's state"
)]
fn after_copy_failure<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: &'static str,
    hooks: &mut impl Hooks<T, E>,
    error: Option<(&E, effect::Effect)>,
    ok_hint: Option<Duration>,
    guards: Guards<'_>,
    retry_pending: bool,
    number: u32,
) -> CopyDecision<Result<T, E>> {
    let (error, seen) = match error {
        Some((error, seen)) => (Some(error), seen),
        None => (None, effect::Effect::Unstated),
    };
    // The retry already decided is the one this failure would start; the hint this failure
    // carries (within `max_delay`) is a floor under its start: `Retry(hint)`, no earlier than.
    if retry_pending {
        let hint = match error {
            Some(error) => hooks.retry_after(error),
            None => ok_hint,
        };
        // Never at or past the call's deadline (or an enclosing call's), as no sleep ends there
        // (`after_failure_within`): the retry then starts when it was due.
        // The hint is read as `after_failure_chosen` reads it: under `HintMode::Floor` one
        // beyond `max_delay` is not waited; under `HintMode::Clamp` it is cut to the mode's
        // margin (past now: the pending retry's own start is the later bound the driver keeps)
        // and `max_delay` does not bound it.
        let inherited = context::inherited_deadline();
        let hint = match engine.policy().hint_mode() {
            HintMode::Floor => hint.filter(|h| *h <= engine.policy().max_delay()),
            mode @ HintMode::Clamp { .. } => hint.map(|h| mode.wait(Duration::ZERO, h)),
        };
        return match hint {
            Some(hint) if engine.wakes_in_time(Instant::now(), hint, inherited) => {
                CopyDecision::Retry(hint)
            }
            _ => CopyDecision::Wait,
        };
    }
    // The one-layer rule, as in `decide`: a call nested in an attempt of a call that will still
    // retry does not retry itself; the copies in flight may still answer.
    if engine.defers_to_outer(context::outer_retries()) {
        return CopyDecision::Wait;
    }
    let hint = match error {
        Some(error) => hooks.retry_after(error),
        None => ok_hint,
    };
    let inherited = context::inherited_deadline();
    let choose = |attempt, computed| error.and_then(|e| hooks.delay_for(e, attempt, computed));
    let decision = engine.after_failure_alongside(
        hint,
        choose,
        Instant::now(),
        inherited,
        guards.budget_ref(),
    );
    match decision {
        Decision::Retry(delay) => {
            if let Some(error) = error {
                hooks.on_retry(error, &RetryContext::of_copy(engine, number), delay);
                let logged = Logged::new(error, engine.policy().log_error);
                events::retrying(
                    name,
                    reported(engine, number),
                    delay,
                    engine.class(),
                    seen,
                    logged,
                );
            } else {
                events::retrying_ok(name, reported(engine, number), delay, engine.class());
            }
            CopyDecision::Retry(delay)
        }
        Decision::Stop(_) => CopyDecision::Wait,
    }
}

/// Starts an attempt alongside the copies of a hedged call in flight, if it may start: attempts
/// are left, time remains (see [`Engine::would_run`]), `budget` pays for it when `hedge` (a
/// retry was paid by [`decide_copy`]; if it cannot start, that payment comes back), and the
/// guards let it through: `breaker` gives it its own permit and `throttle` is asked for it, as
/// for any attempt ([`admit`]; the call's bulkhead slot covers every copy). `None`: it does not
/// start, and the copies in flight go on (a refused hedge is the call's last: the driver starts
/// no more). `Some((admitted, limit))`: it started (it is attempt `engine.attempt()`), under
/// those admissions and that time limit.
///
/// ```
/// use reattempt::{RetryBudget, RetryPolicy};
/// use retry_runtime::__private::{Engine, begin, start_alongside};
///
/// let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
/// let budget = RetryBudget::builder().max_tokens(10).retry_cost(5).build().unwrap();
/// let mut engine = Engine::new(&policy);
/// begin(&mut engine, false);
/// assert!(start_alongside(&mut engine, None, None, Some(&budget), false, true).is_some());
/// assert!(start_alongside(&mut engine, None, None, Some(&budget), false, true).is_some());
/// assert_eq!(engine.attempt(), 3);
/// assert!(start_alongside(&mut engine, None, None, Some(&budget), false, true).is_none(), "no attempt left");
/// ```
pub fn start_alongside(
    engine: &mut Engine<'_>,
    breaker: Option<&CircuitBreaker>,
    throttle: Option<&AdaptiveThrottle>,
    budget: Option<&RetryBudget>,
    timed: bool,
    hedge: bool,
) -> Option<(Admitted, Option<Duration>)> {
    // What was paid for this attempt goes back: the retry `decide_copy` paid, or the hedge's
    // cost (paid here, without forgetting a retry paid before it).
    let hedged_before = engine.paid_hedge();
    let refund = |engine: &Engine<'_>| {
        if let Some(budget) = budget {
            if hedge {
                budget.refund(false);
                engine.hedge_not_made(hedged_before);
            } else {
                engine.unmade(budget);
                // A retry alongside copies in flight: the call has hedged (copies overlap only
                // after a hedge), so a success deposits nothing, as `pay_hedge` says.
                engine.mark_hedged();
            }
        }
    };
    // A hedge is an attempt started while others run: none starts once the call's deadline (or
    // an enclosing call's) has passed, even an untimed one, which `would_run` lets through
    // (a retry's sleep never ends past the deadline; a hedge's timer is not clipped to it).
    let inherited = context::inherited_deadline();
    let past_deadline =
        || state::earliest(engine.deadline(), inherited).is_some_and(|d| Instant::now() >= d);
    if engine.attempt() >= engine.policy().max_attempts()
        || !engine.would_run(timed, Instant::now, inherited)
        || past_deadline()
    {
        if !hedge {
            refund(engine);
        }
        return None;
    }
    if hedge
        && let Some(budget) = budget
        && !engine.pay_hedge(budget)
    {
        return None;
    }
    let admitted = admit(engine, breaker, throttle, false, timed);
    let guards = Guards::NONE.admitted(breaker, throttle, admitted);
    if admitted.rejection().is_some() {
        // A breaker's permit taken for an attempt the throttle then shed goes back unused.
        guards.release();
        refund(engine);
        return None;
    }
    match begin(engine, timed) {
        Start::Run(limit) => {
            if hedge {
                engine.spans.hedged();
            }
            Some((admitted, limit))
        }
        Start::NotMade => {
            guards.release();
            engine.forget_not_made();
            refund(engine);
            None
        }
    }
}
