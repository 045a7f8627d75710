//! What follows an attempt's outcome: return it, or sleep and retry; the guards and the budget
//! hear of it.

use std::cell::Cell;
use std::fmt::Debug;
use std::time::Duration;

use tokio::time::Instant;

use crate::ErrorClass;
use crate::classify::effect;
use crate::engine::context::{self, RetryContext};
use crate::engine::events::{self, CallName, Logged};
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::Hooks;
use crate::engine::state::{Decision, Engine};
use crate::guards::Guards;
use crate::guards::budget::RetryBudget;

#[cfg(feature = "spans")]
pub(super) mod spans;
#[cfg(test)]
mod tests;

/// What follows an attempt's outcome, per the engine's rules.
///
/// - `Ok(v)`: returned, unless `hooks.retry_if_ok(&v)` asks for a retry (after the schedule's
///   delay or, if longer, `hooks.retry_after_ok(&v)`); when no retry is left, the last `Ok` is
///   returned.
/// - `Err(e)`: retried if `hooks.retry_if(&e)`, after the schedule's delay or, if longer,
///   `hooks.retry_after(&e)` (a server's requested delay); `hooks.on_retry` is called before the
///   sleep. Otherwise returned.
/// - An attempt that was not made ([`Start::NotMade`](crate::engine::state::Start::NotMade)): returned at once, reason
///   `DeadlineReached`; the breaker hears nothing and the budget refunds its retry.
/// - An attempt a guard in `guards` rejected (the breaker, the throttle, or a call the bulkhead
///   turned away): returned at once, never retried; it is not an attempt made, and the budget
///   refunds the retry that led to it.
/// - With the policy's `one_layer`, a failed attempt of a call nested in an attempt of a call
///   that still has attempts left is returned, not retried (`GiveUpReason::OuterRetries`).
/// - A breaker in `guards` hears whether the attempt failed (an outcome to retry, or one that
///   timed out: our `timeout` cut it, or `hooks.is_timeout` says so) or not. A budget in `guards`
///   pays for each retry and is paid back by a success. The deadline of an enclosing retrying
///   call bounds the sleeps.
/// - Under a long-polling policy, a call that ends because the budget alone refused its retry
///   must wait that retry's backoff before it returns: the driver asks
///   [`Engine::linger`] when the decision is to stop.
///
/// On success with the default `retry_if_ok`, this reads no clock and draws no random number.
///
/// ```
/// use reattempt::{FnHooks, GiveUpReason, RetryPolicy};
/// use retry_runtime::__private::{Decision, Engine, Guards, decide};
///
/// let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
/// let mut engine = Engine::new(&policy);
/// let outcome: Result<u8, &str> = Err("bad request");
/// let mut hooks = FnHooks::of(&outcome).retry_if(|e| *e == "busy");
/// retry_runtime::__private::begin(&mut engine, false);
/// assert_eq!(decide(&mut engine, "demo", &mut hooks, outcome, Guards::NONE), Decision::Stop(Err("bad request")));
/// ```
#[inline]
pub fn decide<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
) -> Decision<Result<T, E>> {
    decide_inner(engine, name, hooks, outcome, guards, None, 0)
}

/// As [`decide`], for a call whose breaker or throttle may turn away a *retry*: the outcome of
/// an attempt that is retried is kept in `last` (until the next decision), and a retry the
/// breaker or the throttle rejects ends the call with it, as a budget that cannot pay ends the
/// call with the last outcome. The rejection itself is the call's result only when no attempt
/// was made (the first was rejected). The driver keeps `last` across the sleep.
///
/// ```
/// use reattempt::{BreakerOpen, CircuitBreaker, FnHooks, GiveUpReason, RetryPolicy};
/// use retry_runtime::__private::{Decision, Engine, Guards, admit, begin, decide_keeping};
///
/// let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
/// let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
/// let mut engine = Engine::new(&policy);
/// let mut last = None;
/// let admitted = admit(&engine, Some(&breaker), None, false, false);
/// begin(&mut engine, false);
/// let outcome: Result<(), &str> = Err("unavailable");
/// let mut hooks = FnHooks::of(&outcome);
/// let guards = Guards::NONE.admitted(Some(&breaker), None, admitted);
/// assert!(matches!(decide_keeping(&mut engine, "demo", &mut hooks, outcome, guards, &mut last), Decision::Retry(_)));
/// // The failure opened the breaker: the retry is turned away, and the call ends with the
/// // last real error, not the rejection.
/// let admitted = admit(&engine, Some(&breaker), None, false, false);
/// assert_eq!(admitted.rejection(), Some(GiveUpReason::BreakerOpen));
/// let guards = Guards::NONE.admitted(Some(&breaker), None, admitted);
/// let rejection: Result<(), &str> = Err("circuit breaker is open");
/// assert_eq!(
///     decide_keeping(&mut engine, "demo", &mut hooks, rejection, guards, &mut last),
///     Decision::Stop(Err("unavailable"))
/// );
/// # let _ = BreakerOpen::new();
/// ```
#[inline]
pub fn decide_keeping<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    last: &mut Option<Result<T, E>>,
) -> Decision<Result<T, E>> {
    decide_inner(engine, name, hooks, outcome, guards, Some(last), 0)
}

/// What follows an attempt a guard turned away before it began (its
/// [`Admitted::rejection`](crate::__private::Admitted::rejection) is `Some`): the call ends, with
/// what [`decide_keeping`] gives for that attempt's `error` (the rejection, or the last outcome
/// kept in `last`), but without the hooks and without a [`Decision`], so that a driver that
/// calls it where the rejection happens shows the compiler that a rejected attempt never sleeps
/// and never asks the hooks.
///
/// # Errors
/// The call's error: the rejection, or the last attempt's error kept in `last`.
///
/// ```
/// use reattempt::{CircuitBreaker, GiveUpReason, RetryPolicy};
/// use retry_runtime::__private::{Engine, Guards, admit, decide_rejected};
///
/// let policy = RetryPolicy::builder().build().unwrap();
/// let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
/// breaker.record(breaker.try_acquire().unwrap(), false);
/// let mut engine = Engine::new(&policy);
/// let mut last: Option<Result<(), &str>> = None;
/// let admitted = admit(&engine, Some(&breaker), None, false, false);
/// assert_eq!(admitted.rejection(), Some(GiveUpReason::BreakerOpen));
/// let guards = Guards::NONE.admitted(Some(&breaker), None, admitted);
/// assert_eq!(
///     decide_rejected(&mut engine, "demo", "circuit breaker is open", guards, &mut last),
///     Err("circuit breaker is open")
/// );
/// ```
#[cold]
#[inline(never)]
pub fn decide_rejected<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    error: E,
    guards: Guards<'_>,
    last: &mut Option<Result<T, E>>,
) -> Result<T, E> {
    // The steps of `decide_inner` for an error, up to the rejection.
    #[cfg(feature = "testing")]
    if let Some(kind) = engine.take_injected() {
        events::fault_injected(name.name(), engine.attempt(), kind);
    }
    first_attempt_ended(engine, guards.budget_ref(), 0);
    #[cfg(feature = "spans")]
    let reason = guards.rejection();
    #[cfg(feature = "spans")]
    if engine.spans.active() {
        crate::engine::spans::forget_notes();
    }
    let out = unmade(engine, name.name(), error, guards, Some(last)).unwrap_or_else(Err);
    #[cfg(feature = "spans")]
    if engine.spans.active() {
        spans::rejected::<T, E, _>(engine, name, reason, out.is_ok());
    }
    out
}

/// [`decide_keeping`] when `last` is a place to keep the outcome, [`decide`] when it is `None`:
/// for a driver whose guard slot's type says which (see `drivers::kept`). Inlined as [`decide`]
/// is, so that the success path stays in the caller's loop.
#[inline]
pub(crate) fn decide_kept<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    last: Option<&mut Option<Result<T, E>>>,
) -> Decision<Result<T, E>> {
    decide_inner(engine, name, hooks, outcome, guards, last, 0)
}

/// The rules of [`decide`], the outcome kept in `last` if it is given (see [`decide_keeping`]),
/// for attempt `number` (0: the engine's current attempt): a hedged call's copy that ends while
/// a later copy runs reports its own attempt, not the newest.
// Always inlined with spans too, whose test would otherwise tip it out of the caller's loop.
#[cfg_attr(feature = "spans", allow(clippy::inline_always), inline(always))]
#[cfg_attr(not(feature = "spans"), inline)]
pub(super) fn decide_inner<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> Decision<Result<T, E>> {
    #[cfg(feature = "spans")]
    let failed = outcome.is_err();
    #[cfg(feature = "spans")]
    if engine.spans.active() {
        crate::engine::spans::forget_notes();
    }
    let decision = decide_outcome(engine, name, hooks, outcome, guards, last, number);
    #[cfg(feature = "spans")]
    if engine.spans.active() {
        spans::decided::<T, E, _>(engine, name, number, failed, &decision);
    }
    decision
}

/// The rules of [`decide_inner`], the spans told apart (feature `spans`).
#[inline]
fn decide_outcome<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    outcome: Result<T, E>,
    guards: Guards<'_>,
    last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> Decision<Result<T, E>> {
    #[cfg(feature = "testing")]
    if let Some(kind) = engine.take_injected() {
        events::fault_injected(name.name(), engine.attempt(), kind);
    }
    first_attempt_ended(engine, guards.budget_ref(), number);
    // The success path, kept small so that it inlines into the caller's loop.
    match outcome {
        // Written out here rather than calling `accepted` (which a hedged copy's decision uses):
        // the success path of every call, kept as the compiler inlines it best (a call to
        // `accepted` cost the breaker's path 9 instructions and the closure API's 14). Without
        // a `retry_if_ok` (`retries_ok`, a constant), nothing is asked.
        Ok(value)
            if !hooks.retries_ok() || ok_verdict(engine, hooks, &value) == OkVerdict::Accept =>
        {
            events::attempt_made(name);
            if hooks.ok_failed(&value) {
                return ok_failed(
                    engine,
                    name.name(),
                    value,
                    guards,
                    GiveUpReason::NotRetryable,
                );
            }
            guards.record(true);
            if let Some(budget) = guards.budget_ref() {
                engine.succeeded(budget);
            }
            events::call_finished(name, engine.attempt(), true);
            Decision::Stop(Ok(value))
        }
        // Asked above: refused (the crate's judgement or HTTP's safety rule kept an unknown
        // outcome from a retry), the value is returned, a failure.
        Ok(value) if ok_refused() => {
            events::attempt_made(name);
            ok_failed(
                engine,
                name.name(),
                value,
                guards,
                GiveUpReason::UnknownOutcome,
            )
        }
        Ok(value) => {
            events::attempt_made(name);
            engine.note_class(ok_class());
            let hint = hooks.retry_after_ok(&value);
            after_ok_to_retry(
                engine,
                name.name(),
                hooks,
                value,
                hint,
                guards,
                last,
                number,
            )
        }
        Err(error) => after_error(engine, name.name(), hooks, error, guards, last, number),
    }
}

/// The call's first attempt (attempt `number`; 0: the engine's current one) ended, whatever its
/// outcome: the ratio budget counts the call's request, here and nowhere else, so that every
/// call whose first attempt ends deposits once (an attempt a guard turned away was not made,
/// and a call dropped during its first attempt made no request that ended).
#[inline]
pub(crate) fn first_attempt_ended(engine: &Engine<'_>, budget: Option<&RetryBudget>, number: u32) {
    let number = if number == 0 {
        engine.attempt()
    } else {
        number
    };
    if number == 1
        && let Some(budget) = budget
    {
        budget.request_made();
    }
}

/// A call the circuit breaker rejected: it ends at once with `error` (never retried), the give-up
/// is reported, and what the budget was paid for this never-made attempt is refunded. The
/// breaker is asked before the attempt begins, so the attempt that was not made is the one after
/// `engine.attempt()`.
fn rejected<E: Debug>(
    engine: &Engine<'_>,
    name: &'static str,
    error: E,
    guards: Guards<'_>,
    reason: GiveUpReason,
) -> E {
    engine.rejected(Instant::now);
    // A breaker's permit taken for an attempt another guard (the throttle) then rejected goes
    // back unused.
    guards.release();
    if let Some(budget) = guards.budget_ref() {
        engine.unmade(budget);
    }
    let logged = Logged::new(&error, engine.policy().log_error);
    events::rejected(name, engine.attempt(), reason, logged);
    error
}

/// What the engine's rules say after a failed attempt, the one-layer rule first: a call with
/// `one_layer` nested in an attempt of a call that will still retry leaves the retrying to it.
fn after_failure(
    engine: &mut Engine<'_>,
    retryable: bool,
    refused: Option<GiveUpReason>,
    hint: Option<std::time::Duration>,
    choose: impl FnOnce(u32, Duration) -> Option<Duration>,
    guards: Guards<'_>,
) -> Decision<GiveUpReason> {
    let now = Instant::now();
    if retryable && engine.defers_to_outer(context::outer_retries()) {
        engine.start_or(|| now);
        return Decision::Stop(GiveUpReason::OuterRetries);
    }
    // The hooks refused the retry (`Hooks::retry_refused`).
    if retryable && let Some(reason) = refused {
        engine.start_or(|| now);
        return Decision::Stop(reason);
    }
    let inherited = context::inherited_deadline();
    engine.after_failure_chosen(retryable, hint, choose, now, inherited, guards.budget_ref())
}

/// What `retry_if_ok` says of an `Ok` value, asked inside a judgement of this call (see
/// [`judge`]), so that a `retry_if_ok` that asks the crate ([`transient`](crate::transient) of a
/// 503) repeats an unknown outcome only on an idempotent call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OkVerdict {
    /// Not retried: the call's result.
    Accept,
    /// Retried.
    Retry,
    /// Not retried because its outcome is unknown and the call is not idempotent (the crate's
    /// judgement, or HTTP's safety rule, said no): returned, a failure.
    Refused,
}

/// Asks `retry_if_ok` about `value` in a judgement (see [`OkVerdict`]), then, for a value it
/// retries, `class_ok` in the same judgement (as [`judged`] for errors: hooks that state no class
/// take the one `transient` noted, a 429's); a refusal and the class are noted for the match arm
/// that follows at once ([`ok_refused`], [`ok_class`]: nothing runs in between).
#[cold]
#[inline(never)]
pub(super) fn ok_verdict<T, E, H: Hooks<T, E>>(
    engine: &Engine<'_>,
    hooks: &mut H,
    value: &T,
) -> OkVerdict {
    let ((retry, class), verdict) = judge(
        engine,
        effect::Subject::Value,
        |hooks: &mut H| {
            let retry = hooks.retry_if_ok(value);
            (
                retry,
                if retry {
                    hooks.class_ok(value)
                } else {
                    ErrorClass::Transient
                },
            )
        },
        hooks,
    );
    let answer = match (retry, verdict.refused) {
        (true, _) => OkVerdict::Retry,
        (false, false) => OkVerdict::Accept,
        (false, true) => OkVerdict::Refused,
    };
    OK_REFUSED.set(answer == OkVerdict::Refused);
    OK_CLASS.set(class);
    answer
}

thread_local! {
    /// The `Ok` value [`ok_verdict`] just judged was refused a retry.
    static OK_REFUSED: Cell<bool> = const { Cell::new(false) };
    /// The class of the `Ok` value [`ok_verdict`] just judged retried.
    static OK_CLASS: Cell<ErrorClass> = const { Cell::new(ErrorClass::Transient) };
}

/// Whether the `Ok` value just judged was refused a retry (see [`ok_verdict`]); forgets it.
pub(super) fn ok_refused() -> bool {
    OK_REFUSED.replace(false)
}

/// The class of the `Ok` value just judged and retried (see [`ok_verdict`]); forgets it.
pub(super) fn ok_class() -> ErrorClass {
    OK_CLASS.replace(ErrorClass::Transient)
}

/// An `Ok` value that `retry_if_ok` did not ask to retry: the call's success, unless the value is
/// still the dependency's failure (`Hooks::ok_failed`).
#[inline]
pub(super) fn accepted<T, E>(
    engine: &mut Engine<'_>,
    name: impl CallName,
    hooks: &mut impl Hooks<T, E>,
    value: T,
    guards: Guards<'_>,
) -> Decision<Result<T, E>> {
    events::attempt_made(name);
    if hooks.ok_failed(&value) {
        return ok_failed(
            engine,
            name.name(),
            value,
            guards,
            GiveUpReason::NotRetryable,
        );
    }
    guards.record(true);
    if let Some(budget) = guards.budget_ref() {
        engine.succeeded(budget);
    }
    events::call_finished(name, engine.attempt(), true);
    Decision::Stop(Ok(value))
}

/// An `Ok` value that is not retried but is still the dependency's failure (`Hooks::ok_failed`):
/// returned at once, a failure for the breaker, nothing back to the budget; `reason` says why
/// (`UnknownOutcome` when the crate's judgement, or HTTP's safety rule, refused its retry).
#[cold]
#[inline(never)]
pub(super) fn ok_failed<T, E>(
    engine: &mut Engine<'_>,
    name: &'static str,
    value: T,
    guards: Guards<'_>,
    reason: GiveUpReason,
) -> Decision<Result<T, E>> {
    guards.record(false);
    events::giving_up(name, engine.attempt(), reason, None);
    Decision::Stop(Ok(value))
}

/// An `Ok` value that `retry_if_ok` asked to retry.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments, reason = "the value and the call's state")]
fn after_ok_to_retry<T, E>(
    engine: &mut Engine<'_>,
    name: &'static str,
    hooks: &mut impl Hooks<T, E>,
    value: T,
    hint: Option<Duration>,
    guards: Guards<'_>,
    last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> Decision<Result<T, E>> {
    guards.record(false);
    let refused = hooks.retry_refused();
    let choose = |attempt, computed| hooks.delay_for_ok(&value, attempt, computed);
    match after_failure(engine, true, refused, hint, choose, guards) {
        Decision::Retry(delay) => {
            events::retrying_ok(name, reported(engine, number), delay, engine.class());
            if let Some(last) = last {
                *last = Some(Ok(value));
            }
            Decision::Retry(delay)
        }
        Decision::Stop(reason) => {
            events::giving_up(name, engine.attempt(), reason, None);
            Decision::Stop(Ok(value))
        }
    }
}

/// The result of a call whose attempt was not made: no time remained to make it, or a guard
/// turned it away; `Err(error)` back when the attempt was made.
fn unmade<T, E: Debug>(
    engine: &Engine<'_>,
    name: &'static str,
    error: E,
    guards: Guards<'_>,
    last: Option<&mut Option<Result<T, E>>>,
) -> Result<Result<T, E>, E> {
    if engine.not_made() {
        // No time remained to make the attempt: the call is over. The dependency was not asked,
        // so the breaker hears nothing (a half-open probe slot goes back to other callers), and
        // the budget gets back what it paid for this retry: an attempt never made costs nothing.
        guards.release();
        if let Some(budget) = guards.budget_ref() {
            engine.unmade(budget);
        }
        // Reported like a rejection: by the attempts that were made.
        let made = engine.attempt().saturating_sub(1);
        let logged = Logged::new(&error, engine.policy().log_error);
        events::giving_up(name, made, GiveUpReason::DeadlineReached, Some(logged));
        return Ok(Err(error));
    }
    if let Some(reason) = guards.rejection() {
        let rejection = rejected(engine, name, error, guards, reason);
        // A turned-away retry ends the call with the last attempt's outcome (kept by the
        // driver), as a budget that cannot pay does: the caller sees why the call failed.
        return Ok(last.and_then(Option::take).unwrap_or(Err(rejection)));
    }
    Err(error)
}

/// An error: retried per the hooks and the engine, or returned.
#[cold]
#[inline(never)]
fn after_error<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: &'static str,
    hooks: &mut impl Hooks<T, E>,
    error: E,
    guards: Guards<'_>,
    mut last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> Decision<Result<T, E>> {
    let error = match unmade(engine, name, error, guards, last.as_deref_mut()) {
        Ok(result) => return Decision::Stop(result),
        Err(error) => error,
    };
    events::attempt_made(name);
    let ((retryable, class), verdict) = judge_error(engine, hooks, &error);
    engine.note_class(class);
    // A timed-out attempt is the dependency's failure, whether or not the call retries it: a
    // dependency that hangs must open the breaker; so is an error kept from a retry that it
    // would have had (`Hooks::error_failed`: a POST's reset under HTTP's safety rule; an
    // unknown outcome the crate's judgement does not repeat).
    // Whether the error is the dependency's doing at all (`Hooks::counts_as_failure`).
    let counted = !retryable || hooks.counts_as_failure(&error);
    let failure = engine.timed_out()
        || if retryable {
            counted
        } else {
            verdict.refused || hooks.error_failed(&error)
        };
    if counted || engine.timed_out() {
        guards.record(!failure);
    } else {
        // Not the dependency's doing: neither a failure nor a success, as a cancelled copy.
        guards.cancelled();
    }
    let (hint, refused) = if retryable {
        (hooks.retry_after(&error), hooks.retry_refused())
    } else {
        (None, None)
    };
    let choose = |attempt, computed| hooks.delay_for(&error, attempt, computed);
    match after_failure(engine, retryable, refused, hint, choose, guards) {
        Decision::Retry(delay) => {
            hooks.on_retry(&error, &RetryContext::of_copy(engine, number), delay);
            let logged = Logged::new(&error, engine.policy().log_error);
            events::retrying(
                name,
                reported(engine, number),
                delay,
                engine.class(),
                verdict.effect,
                logged,
            );
            keep(last, Err(error), counted);
            Decision::Retry(delay)
        }
        Decision::Stop(reason) => {
            let reason = refusal(reason, verdict);
            let logged = Logged::new(&error, engine.policy().log_error);
            events::giving_up(name, engine.attempt(), reason, Some(logged));
            Decision::Stop(kept_over(last, Err(error), counted))
        }
    }
}

/// Asks `ask` (the call's retry predicate, through `hooks`) inside a judgement of this call
/// (see `classify::effect`): the crate's classifications asked inside it refuse an unknown
/// outcome unless the call is idempotent ([`Engine::idempotent`]); an attempt the policy's
/// `timeout` cut is an unknown outcome whatever its error says. Asked before the error's class
/// is noted, so that `timed_out` is the policy's cut alone, not an error that says it was a
/// timeout (a pool's acquire timeout proves nothing was sent).
#[inline]
fn judge<T, E, H: Hooks<T, E>, R>(
    engine: &Engine<'_>,
    subject: effect::Subject,
    ask: impl FnOnce(&mut H) -> R,
    hooks: &mut H,
) -> (R, effect::Verdict) {
    let idempotent = engine.idempotent_over(hooks.idempotent());
    effect::judging_about(subject, idempotent, engine.timed_out(), || ask(hooks))
}

/// [`judged`] in a judgement of an error of type `E` (see [`judge`]).
#[inline]
pub(super) fn judge_error<T, E, H: Hooks<T, E>>(
    engine: &Engine<'_>,
    hooks: &mut H,
    error: &E,
) -> ((bool, ErrorClass), effect::Verdict) {
    let subject = effect::Subject::error::<E>();
    judge(engine, subject, |hooks: &mut H| judged(hooks, error), hooks)
}

/// An error's retry predicate and class, asked in that order inside one judgement (see
/// [`judge`]): hooks that state no class take the one the crate's judgement noted for this very
/// error ([`transient`](crate::transient) notes [`Transient::class`](crate::Transient::class)),
/// so that `.retry_if(transient)` alone honours it in every driver, as `#[retryable]` does; a
/// class noted for another type (an inner cause) is not kept (`effect::Subject`).
#[inline]
fn judged<T, E, H: Hooks<T, E>>(hooks: &mut H, error: &E) -> (bool, ErrorClass) {
    let retryable = hooks.retry_if(error);
    (retryable, hooks.class(error))
}

/// The reason a call that did not retry gives up with: an error not retried because the crate's
/// judgement refused an unknown outcome on a call that is not idempotent says so.
pub(super) fn refusal(reason: GiveUpReason, verdict: effect::Verdict) -> GiveUpReason {
    if reason == GiveUpReason::NotRetryable && verdict.refused {
        GiveUpReason::UnknownOutcome
    } else {
        reason
    }
}

/// The attempt a retry reports (`on_retry`, the retry event): `number`, or the engine's current
/// attempt for 0.
pub(super) fn reported(engine: &Engine<'_>, number: u32) -> u32 {
    if number == 0 {
        engine.attempt()
    } else {
        number
    }
}

/// Keeps `outcome` in `last` (if the call keeps one) as the call's last real outcome, unless it
/// is not the dependency's doing (`counted` false: `Hooks::counts_as_failure`) and a real one is
/// kept already.
pub(super) fn keep<O>(last: Option<&mut Option<O>>, outcome: O, counted: bool) {
    if let Some(last) = last
        && (counted || last.is_none())
    {
        *last = Some(outcome);
    }
}

/// The outcome a call ends with: `outcome`, unless it is not the dependency's doing (`counted`
/// false: `Hooks::counts_as_failure`) and a real outcome is kept in `last`: then that one (a
/// hedged copy the client could not send must not end the call with its own error while the
/// server's answer to another copy is known).
pub(super) fn kept_over<O>(last: Option<&mut Option<O>>, outcome: O, counted: bool) -> O {
    match last {
        Some(last) if !counted => last.take().unwrap_or(outcome),
        _ => outcome,
    }
}
