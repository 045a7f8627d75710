//! The engine's rules applied for a driver. A driver's loop is always the same four steps, and
//! each is one call here:
//!
//! 1. [`admit`]: ask the breaker for a permit, unless the attempt cannot be made anyway; a
//!    rejection is not an attempt, and goes straight to [`decide`] as the attempt's error;
//! 2. [`begin`] the attempt: it gets its time limit, or is not made (no time left);
//! 3. poll the attempt in the call's context, raced against its time limit (the driver's only
//!    job, with `drivers::timed`), and hand its outcome to [`decide`];
//! 4. sleep as long as [`decide`] says, or stop with what it returns.
//!
//! The deadline comes before the breaker: an attempt with no time left takes no permit and is not
//! rejected; it ends the call as `DeadlineReached`.

use std::cell::Cell;
use std::fmt::Debug;
use std::time::Duration;

use tokio::time::Instant;

use crate::classify::effect;
use crate::engine::context::{self, RetryContext};
use crate::engine::deadline::deadline_after;
use crate::engine::events::{self, CallName, Logged};
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::Hooks;
use crate::{ErrorClass, HintMode};
// Drawn by the state; the drivers name it here, beside the steps that plan it.
#[cfg(feature = "testing")]
pub(crate) use crate::engine::state::Fault;
use crate::engine::state::{self, Decision, Engine, Start};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::{CallSlot, SlotSource};
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admission, Admitted, Guards, ThrottleAdmission};

/// Asks a call's guards, in order, for leave to make the next attempt: the bulkhead first
/// (`full`: the call holds no slot, see [`poll_slot`]; then nothing else is asked); then,
/// unless the attempt cannot be made anyway (a `timed` attempt with no time left: see
/// [`Engine::would_run`], which then takes no permit and ends the call as `DeadlineReached`),
/// the circuit breaker, and the adaptive throttle unless the breaker rejected it.
///
/// The answer either lets the attempt run ([`Admitted::rejection`] is `None`: [`begin`] it) or
/// turns it away with a reason, which the driver converts into the call's error and hands to
/// [`decide`] (with [`Guards::admitted`]): the call ends with it, never retried.
///
/// ```
/// use reattempt::{AdaptiveThrottle, CircuitBreaker, GiveUpReason, RetryPolicy};
/// use retry_runtime::__private::{Engine, admit};
///
/// let policy = RetryPolicy::builder().build().unwrap();
/// let engine = Engine::new(&policy);
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let throttle = AdaptiveThrottle::builder().build().unwrap();
/// assert_eq!(admit(&engine, Some(&breaker), Some(&throttle), false, false).rejection(), None);
/// assert_eq!(throttle.counts(), (1, 0), "asked");
/// let full = admit(&engine, Some(&breaker), Some(&throttle), true, false);
/// assert_eq!(full.rejection(), Some(GiveUpReason::BulkheadFull));
/// assert_eq!(throttle.counts(), (1, 0), "not asked for a call the bulkhead turned away");
/// ```
#[inline]
pub fn admit(
    engine: &Engine<'_>,
    breaker: Option<&CircuitBreaker>,
    throttle: Option<&AdaptiveThrottle>,
    full: bool,
    timed: bool,
) -> Admitted {
    if full {
        return Admitted::FULL;
    }
    if (breaker.is_none() && throttle.is_none())
        || !engine.would_run(timed, Instant::now, inherited_for(timed))
    {
        return Admitted::NOT_ASKED;
    }
    let admission = match breaker {
        Some(breaker) => Admission::from(breaker.try_acquire()),
        None => Admission::NotAsked,
    };
    let throttled = match throttle {
        Some(throttle) if !admission.rejected() => ThrottleAdmission::from(throttle.try_acquire()),
        _ => ThrottleAdmission::NotAsked,
    };
    Admitted::asked(admission, throttled)
}

/// Takes the call's slot of `bulkhead` before its first attempt (a call already holding one, or
/// turned away, is left as it is): at once if one is free; otherwise, with the bulkhead's
/// `max_wait`, the driver polls the wait (`Pending` until a slot comes free or the wait ends);
/// without one, the call is turned away at once. `Ready(full)`: whether the call was turned
/// away (pass it to [`admit`]). The slot is held until the driver drops `slot`, at the call's
/// end, its sleeps included.
///
/// The wait never outlives the call's deadline: its own `max_elapsed` (whose clock starts with
/// the wait: the wait is part of the call) or an enclosing call's, whichever is earlier
/// (`slot_deadline`). A wait that ends without a slot ends the call as a spent deadline
/// does everywhere else: if the attempt could not be made now (`timed`, see
/// [`Engine::would_run`]), the call holds no slot (`CallSlot::Expired`), `Ready(false)`, and
/// [`begin`] finds no time left: the attempt is not made, and the call ends with the timeout's
/// error as `GiveUpReason::DeadlineReached`. A call whose attempt would run anyway (untimed:
/// no `timeout`, which a deadline never cuts) is turned away (`Ready(true)`, `BulkheadFull`):
/// it cannot run without a slot.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use reattempt::Bulkhead;
///     use retry_runtime::__private::{CallSlot, poll_slot};
///
///     use reattempt::RetryPolicy;
///     use retry_runtime::__private::Engine;
///
///     let policy = RetryPolicy::builder().build().unwrap();
///     let engine = Engine::new(&policy);
///     let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
///     let mut slot = CallSlot::default();
///     let full = std::future::poll_fn(|cx| poll_slot(&bulkhead, &mut slot, &engine, false, cx)).await;
///     assert!(!full);
///     assert_eq!(bulkhead.in_flight(), 1);
///     let mut other = CallSlot::default();
///     assert!(std::future::poll_fn(|cx| poll_slot(&bulkhead, &mut other, &engine, false, cx)).await);
///     drop(slot);
///     assert_eq!(bulkhead.in_flight(), 0);
/// }
/// ```
#[allow(
    clippy::needless_pass_by_value,
    reason = "a source is a reference, or a cheap clone of an owner"
)]
pub fn poll_slot<'b, S: SlotSource<'b>>(
    bulkhead: S,
    slot: &mut CallSlot<'b, S::Permit>,
    engine: &Engine<'_>,
    timed: bool,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<bool> {
    loop {
        match slot {
            CallSlot::Held(_) | CallSlot::Expired => return std::task::Poll::Ready(false),
            CallSlot::Full => return std::task::Poll::Ready(true),
            CallSlot::Untaken => {
                *slot = match bulkhead.try_take() {
                    Err(_) if bulkhead.bulkhead().max_wait().is_some() => {
                        CallSlot::Waiting(bulkhead.wait(slot_deadline(engine)))
                    }
                    taken => CallSlot::from_acquired(taken),
                };
            }
            CallSlot::Waiting(wait) => {
                let taken = std::task::ready!(wait.as_mut().poll(cx));
                *slot = match taken {
                    Err(_) if !slot_wait_full(engine, timed) => CallSlot::Expired,
                    taken => CallSlot::from_acquired(taken),
                };
            }
        }
    }
}

/// The instant a call's wait for a bulkhead slot ends by, whatever the bulkhead's `max_wait`:
/// the earlier of the call's own deadline (its clock started now if its policy has
/// `max_elapsed` and it has not started: the wait is part of the call) and the enclosing calls'
/// ([`context::inherited_deadline`], whether or not the call's attempts are timed: a nested call
/// never waits past its caller's deadline). Read only when the call must wait.
pub(crate) fn slot_deadline(engine: &Engine<'_>) -> Option<Instant> {
    if engine.policy().max_elapsed().is_some() {
        engine.start_or(Instant::now);
    }
    state::earliest(engine.deadline(), context::inherited_deadline())
}

/// After a wait for a slot that ended without one (see [`poll_slot`]): whether the call is
/// turned away (`true`: its attempt would run, so the bulkhead's rejection ends it), or its
/// attempt cannot be made any more (`false`: no time is left; `begin` ends the call as
/// `DeadlineReached`).
pub(crate) fn slot_wait_full(engine: &Engine<'_>, timed: bool) -> bool {
    engine.would_run(timed, Instant::now, inherited_for(timed))
}

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
fn inherited_for(timed: bool) -> Option<Instant> {
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

/// The fault of the attempt just begun, if the policy injects one (see [`Fault`]): `None` at
/// once without feature `testing`.
#[cfg(feature = "testing")]
#[inline]
pub(crate) fn fault(engine: &Engine<'_>) -> Option<Fault> {
    engine.draw_fault()
}

/// What a driver does with a [`Fault`] drawn for an attempt that began with time limit
/// `deadline` (`can_fail`: whether the driver can turn a timeout into the call's error).
#[cfg(feature = "testing")]
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
#[cfg(feature = "testing")]
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
#[cfg(feature = "testing")]
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
#[cfg(feature = "testing")]
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

/// No time remained to make the attempt ([`Start::NotMade`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NotMade;

/// What follows an attempt's outcome, per the engine's rules.
///
/// - `Ok(v)`: returned, unless `hooks.retry_if_ok(&v)` asks for a retry (after the schedule's
///   delay or, if longer, `hooks.retry_after_ok(&v)`); when no retry is left, the last `Ok` is
///   returned.
/// - `Err(e)`: retried if `hooks.retry_if(&e)`, after the schedule's delay or, if longer,
///   `hooks.retry_after(&e)` (a server's requested delay); `hooks.on_retry` is called before the
///   sleep. Otherwise returned.
/// - An attempt that was not made ([`Start::NotMade`]): returned at once, reason
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
#[inline]
fn decide_inner<T, E: Debug>(
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
enum OkVerdict {
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
fn ok_verdict<T, E, H: Hooks<T, E>>(engine: &Engine<'_>, hooks: &mut H, value: &T) -> OkVerdict {
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
fn ok_refused() -> bool {
    OK_REFUSED.replace(false)
}

/// The class of the `Ok` value just judged and retried (see [`ok_verdict`]); forgets it.
fn ok_class() -> ErrorClass {
    OK_CLASS.replace(ErrorClass::Transient)
}

/// An `Ok` value that `retry_if_ok` did not ask to retry: the call's success, unless the value is
/// still the dependency's failure (`Hooks::ok_failed`).
#[inline]
fn accepted<T, E>(
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
fn ok_failed<T, E>(
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

/// An error: retried per the hooks and the engine, or returned.
#[cold]
#[inline(never)]
fn after_error<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: &'static str,
    hooks: &mut impl Hooks<T, E>,
    error: E,
    guards: Guards<'_>,
    last: Option<&mut Option<Result<T, E>>>,
    number: u32,
) -> Decision<Result<T, E>> {
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
        return Decision::Stop(Err(error));
    }
    if let Some(reason) = guards.rejection() {
        let rejection = rejected(engine, name, error, guards, reason);
        // A turned-away retry ends the call with the last attempt's outcome (kept by the
        // driver), as a budget that cannot pay does: the caller sees why the call failed.
        return Decision::Stop(last.and_then(Option::take).unwrap_or(Err(rejection)));
    }
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
fn judge_error<T, E, H: Hooks<T, E>>(
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
fn refusal(reason: GiveUpReason, verdict: effect::Verdict) -> GiveUpReason {
    if reason == GiveUpReason::NotRetryable && verdict.refused {
        GiveUpReason::UnknownOutcome
    } else {
        reason
    }
}

/// The attempt a retry reports (`on_retry`, the retry event): `number`, or the engine's current
/// attempt for 0.
fn reported(engine: &Engine<'_>, number: u32) -> u32 {
    if number == 0 {
        engine.attempt()
    } else {
        number
    }
}

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
/// Without others, the rules of [`decide`]. With others: an accepted `Ok` ends the call (the
/// others are dropped by the driver); a non-retryable error ends the call; a retryable error (or
/// an `Ok` that `retry_if_ok` retries) leads to a retry after the usual backoff (no earlier than
/// its hint, `retry_after` or `retry_after_ok`, as in [`decide`]) when one is
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

/// Keeps `outcome` in `last` (if the call keeps one) as the call's last real outcome, unless it
/// is not the dependency's doing (`counted` false: `Hooks::counts_as_failure`) and a real one is
/// kept already.
fn keep<O>(last: Option<&mut Option<O>>, outcome: O, counted: bool) {
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
fn kept_over<O>(last: Option<&mut Option<O>>, outcome: O, counted: bool) -> O {
    match last {
        Some(last) if !counted => last.take().unwrap_or(outcome),
        _ => outcome,
    }
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
        Start::Run(limit) => Some((admitted, limit)),
        Start::NotMade => {
            guards.release();
            engine.forget_not_made();
            refund(engine);
            None
        }
    }
}
