//! The loop of a hedged call (a policy with `hedge_after`), shared by the drivers whose attempts
//! may overlap: the closure API (and the attribute, which expands to it) and the tower layer.
//! A driver lends its pieces ([`HedgeCall`]) and its copies ([`Hedged`]); every rule is the
//! engine's (`steps::start_alongside`, `steps::decide_copy`, `steps::admit`, `steps::begin`).

use std::fmt::Debug;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::task::coop;
use tokio::time::{Instant, Sleep};

use crate::drivers::timed::{poll_copy, poll_timer, set_timer};
use crate::drivers::timeout::TimeoutInto;
use crate::engine::context::{self, enter_copy};
use crate::engine::deadline::instant_after;
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::Hooks;
use crate::engine::state::{Decision, Engine, Start};
use crate::engine::steps::{self, CopyDecision};
use crate::error::Elapsed;
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admitted, Guards};

/// What a driver lends the hedged loop for one poll: its engine, its operation (a closure
/// making one attempt's future), hooks, guards (with `reject` making the call's error for an
/// attempt a guard turned away), the conversion of a timeout, and its one timer.
pub(crate) struct HedgeCall<'a, 'p, Op, K, C, R> {
    pub(crate) engine: &'a mut Engine<'p>,
    pub(crate) name: &'static str,
    pub(crate) op: &'a mut Op,
    pub(crate) hooks: &'a mut K,
    pub(crate) breaker: Option<&'a CircuitBreaker>,
    pub(crate) throttle: Option<&'a AdaptiveThrottle>,
    pub(crate) reject: R,
    pub(crate) budget: Option<&'a RetryBudget>,
    pub(crate) timeout: &'a mut C,
    pub(crate) timer: Pin<&'a mut Option<Sleep>>,
}

/// One copy of a hedged call in flight.
struct HedgeCopy<Fut> {
    /// Its future: `None` only while a fault injected into it (feature `testing`) is waited,
    /// and for good when that fault is an error (the attempt is not made).
    fut: Option<Pin<Box<Fut>>>,
    /// Its time limit; while an injected fault is waited, that wait (none: an error at once).
    limit: Option<Pin<Box<Sleep>>>,
    /// Its attempt number, which its `context()` reports.
    number: u32,
    started: Instant,
    /// What the guards said about it.
    admitted: Admitted,
    /// A fault injected into it (feature `testing`) whose wait has not ended: what follows.
    #[cfg(feature = "testing")]
    pre: Option<steps::AfterWait>,
    /// The fault injected into it, counted when its outcome is decided (or it is cancelled).
    #[cfg(feature = "testing")]
    injected: Option<crate::testing::InjectedFault>,
}

/// What the timer of a hedged call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Next {
    /// Nothing: a hedge timer is set when a copy is in flight and hedges may start.
    #[default]
    Nothing,
    /// The start of a hedge.
    Hedge,
    /// The start of a retry, at the end of its backoff.
    Retry,
}

/// The copies of a hedged call, and what its timer waits for.
pub(crate) struct Hedged<Fut> {
    copies: Vec<HedgeCopy<Fut>>,
    next: Next,
    /// No hedge may start any more in this call (the budget, the breaker or the throttle refused
    /// one).
    no_more_hedges: bool,
    /// When the last attempt started (the next hedge is `hedge_after` after it, even if that
    /// attempt has ended since).
    last_start: Option<Instant>,
}

impl<Fut> Default for Hedged<Fut> {
    fn default() -> Self {
        Hedged {
            copies: Vec::with_capacity(2),
            next: Next::Nothing,
            no_more_hedges: false,
            last_start: None,
        }
    }
}

/// The guards of an attempt made under `admitted`.
fn guards_of<'a>(
    breaker: Option<&'a CircuitBreaker>,
    throttle: Option<&'a AdaptiveThrottle>,
    admitted: Admitted,
    budget: Option<&'a RetryBudget>,
) -> Guards<'a> {
    let guards = Guards::NONE.admitted(breaker, throttle, admitted);
    match budget {
        Some(budget) => guards.budget(budget),
        None => guards,
    }
}

/// A hedged call's loop: start the attempts that are due, poll every copy in flight, hand each
/// outcome to `steps::decide_copy`, and set the timer for the next start (a hedge, `hedge_after`
/// after the last start; or a retry, after its backoff). Dropping `hedged` drops every copy.
///
/// `poll_slot` takes the call's bulkhead slot (one for every copy), before the first attempt, for
/// the call's engine: `Ready(full)` (see `steps::poll_slot`, whose wait ends by the call's
/// deadline; `Ready(false)` without a bulkhead). When the call is
/// over, the driver clears its timer and frees its slot.
///
/// `last`: where the call keeps its last outcome while a retry waits, when its breaker or
/// throttle may turn that retry away (see `drivers::kept`).
#[allow(clippy::too_many_lines, reason = "the hedged loop's steps, in order")]
pub(crate) fn poll_hedged<Op, Fut, T, E, K, C, R>(
    call: &mut HedgeCall<'_, '_, Op, K, C, R>,
    hedged: &mut Hedged<Fut>,
    mut last: Option<&mut Option<Result<T, E>>>,
    mut poll_slot: impl FnMut(&Engine<'_>, &mut Context<'_>) -> Poll<bool>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    K: Hooks<T, E>,
    C: TimeoutInto<E>,
    R: Fn(GiveUpReason) -> E,
{
    let policy = call.engine.policy();
    let (breaker, throttle, budget) = (call.breaker, call.throttle, call.budget);
    loop {
        // Poll every copy first; the first outcome that ends the call wins. Then nothing that is
        // due starts: a hedge whose timer fires as an answer comes is not started, paid, sent
        // or counted.
        // Whether the copies use up the task's cooperative budget in this poll (an always-ready
        // copy): then the timer is polled outside it, as an attempt's time limit is
        // (`drivers::timed`), or no hedge or retry would ever start beside such a copy.
        let had_budget = coop::has_budget_remaining();
        let mut i = 0;
        while i < hedged.copies.len() {
            let copy = &mut hedged.copies[i];
            // A fault injected into the copy (feature `testing`): its wait first, then the
            // copy fails unpolled (`Some`), or its future is made and polled.
            #[cfg(feature = "testing")]
            let failed = match poll_fault(call.engine, call.op, copy, cx) {
                Poll::Ready(failed) => failed,
                Poll::Pending => {
                    i += 1;
                    continue;
                }
            };
            #[cfg(not(feature = "testing"))]
            let failed: Option<Elapsed> = None;
            let outcome = if let Some(failed) = failed {
                Some(Err(call.timeout.timed_out(failed)))
            } else {
                let Some(fut) = copy.fut.as_mut() else {
                    unreachable!("reattempt: a hedged copy without a future to poll")
                };
                let limit = copy.limit.as_mut().map(Pin::as_mut);
                let Poll::Ready(outcome) =
                    poll_copy(call.engine, copy.number, fut.as_mut(), limit, cx)
                else {
                    i += 1;
                    continue;
                };
                outcome
            };
            let copy = hedged.copies.swap_remove(i);
            policy.latencies.record(copy.started.elapsed());
            let outcome = outcome.unwrap_or_else(|| Err(call.timeout.timed_out(Elapsed::new())));
            #[cfg(feature = "testing")]
            if let Some(kind) = copy.injected {
                crate::engine::events::fault_injected(call.name, copy.number, kind);
            }
            let guards = guards_of(breaker, throttle, copy.admitted, budget);
            let others = !hedged.copies.is_empty();
            // An earlier copy's failure already decided a retry, which waits for its backoff.
            let pending = hedged.next == Next::Retry;
            let (engine, name, hooks) = (&mut *call.engine, call.name, &mut *call.hooks);
            let keep = last.as_deref_mut();
            let decision = steps::decide_copy_pending(
                engine,
                name,
                hooks,
                outcome,
                guards,
                others,
                pending,
                keep,
                copy.number,
            );
            // This copy's class (a timeout, throttling) is its own: the next copy to end is
            // another attempt.
            call.engine.forget_class();
            match decision {
                CopyDecision::Stop(out) => {
                    // The losers are dropped (cancelled): their latency so far is a lower bound
                    // of what they would have taken, and their permits go back unused; the
                    // throttle hears them as accepted (not refused). Each was an attempt made
                    // (it reached the dependency): the attempts metric counts it.
                    for loser in hedged.copies.drain(..) {
                        // A first attempt cancelled by a later copy's answer ended too.
                        steps::first_attempt_ended(&*call.engine, budget, loser.number);
                        crate::engine::events::attempt_made(call.name);
                        #[cfg(feature = "testing")]
                        if let Some(kind) = loser.injected {
                            crate::engine::events::fault_injected(call.name, loser.number, kind);
                        }
                        policy.latencies.record(loser.started.elapsed());
                        guards_of(breaker, throttle, loser.admitted, None).cancelled();
                    }
                    return Poll::Ready(out);
                }
                CopyDecision::Retry(delay) => {
                    match call.timer.as_mut().as_pin_mut() {
                        // The retry already due, no earlier than this failure's hint.
                        Some(sleep) if pending => {
                            // A hint past what an `Instant` holds: "never, in practice", as
                            // `set_timer` sleeps it.
                            let now = Instant::now();
                            let floor = instant_after(now, delay);
                            if floor > sleep.deadline() {
                                sleep.reset(floor);
                            }
                        }
                        _ => set_timer(call.timer.as_mut(), delay),
                    }
                    hedged.next = Next::Retry;
                }
                CopyDecision::Wait => {}
            }
        }
        // A copy used up the cooperative budget: the copies polled after it found none left
        // (their timers and sockets answer `Pending`). The next poll begins with the next copy,
        // so that none starves the others.
        let spent = had_budget && !coop::has_budget_remaining();
        if spent && hedged.copies.len() > 1 {
            hedged.copies.rotate_left(1);
        }

        // Start what is due: the first attempt, a retry after its backoff, a hedge (polling the
        // timer of what is not due yet, so that it wakes the task).
        let due = if call.engine.attempt() == 0 {
            Some(Next::Retry)
        } else if hedged.next == Next::Nothing {
            None
        } else if let Some(timer) = call.timer.as_mut().as_pin_mut() {
            poll_timer(timer, spent, cx)
                .is_ready()
                .then_some(hedged.next)
        } else {
            None
        };
        if let Some(kind) = due {
            // Before the first attempt: the bulkhead's slot, one for every copy of the call.
            let full = if call.engine.attempt() == 0 {
                match poll_slot(call.engine, cx) {
                    Poll::Ready(full) => full,
                    Poll::Pending => return Poll::Pending,
                }
            } else {
                false
            };
            hedged.next = Next::Nothing;
            match start_next(call, hedged, last.as_deref_mut(), kind, full) {
                ControlFlow::Break(Some(out)) => return Poll::Ready(out),
                // A retry's backoff (poll its timer), or the attempt just started (poll it).
                ControlFlow::Break(None) | ControlFlow::Continue(()) => continue,
            }
        }

        // The next hedge, `hedge_after` after the last start. A `one_layer` call whose caller
        // still retries makes one attempt (`Engine::defers_to_outer`): a hedge is an attempt too.
        if hedged.next == Next::Nothing
            && !hedged.no_more_hedges
            && !hedged.copies.is_empty()
            && call.engine.attempt() < policy.max_attempts()
            && let Some(hedge_after) = policy.hedge_after()
            && !call.engine.defers_to_outer(context::outer_retries())
            && call.hooks.hedge_allowed()
            // Copies overlap, and each may act: a call not safe to repeat is never hedged.
            && call.engine.idempotent_over(call.hooks.idempotent())
        {
            let last = hedged.copies.iter().map(|c| c.started).max();
            if let Some(last) = last.max(hedged.last_start) {
                let delay = hedge_after.delay(&policy.latencies);
                // Past what an `Instant` holds (`Duration::MAX` from a config): never, in
                // practice, as `tokio::time::sleep` reads it; not at once.
                let at = instant_after(last, delay);
                match call.timer.as_mut().as_pin_mut() {
                    Some(sleep) => sleep.reset(at),
                    None => call.timer.set(Some(tokio::time::sleep_until(at))),
                }
                hedged.next = Next::Hedge;
                continue;
            }
        }
        return Poll::Pending;
    }
}

/// Starts the attempt that is due (`kind`). Alone (no copy in flight), the rules of a call
/// without hedging: a guard's rejection (`full`: the bulkhead turned the call away) or no time
/// left ends the call (`Break(Some(out))`), or leads to a retry after a backoff
/// (`Break(None)`). Alongside copies in flight, an attempt that may not start (see
/// `steps::start_alongside`) is skipped, and a refused hedge is the last.
fn start_next<Op, Fut, T, E, K, C, R>(
    call: &mut HedgeCall<'_, '_, Op, K, C, R>,
    hedged: &mut Hedged<Fut>,
    last: Option<&mut Option<Result<T, E>>>,
    kind: Next,
    full: bool,
) -> ControlFlow<Option<Result<T, E>>>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    K: Hooks<T, E>,
    C: TimeoutInto<E>,
    R: Fn(GiveUpReason) -> E,
{
    let (breaker, throttle, budget) = (call.breaker, call.throttle, call.budget);
    if !hedged.copies.is_empty() {
        let is_hedge = kind == Next::Hedge;
        // The hooks refused any further attempt after a copy's outcome (`retry_refused`), or no
        // longer allow a hedge (`hedge_allowed`) since its timer was set: nothing more starts.
        // A retry decided before is not made: what it was paid comes back.
        let refused = call.hooks.retry_refused().is_some();
        if refused || (is_hedge && !call.hooks.hedge_allowed()) {
            if !is_hedge && let Some(budget) = budget {
                call.engine.unmade_while_hedged(budget);
            }
            hedged.no_more_hedges = true;
            return ControlFlow::Continue(());
        }
        match steps::start_alongside(call.engine, breaker, throttle, budget, C::APPLIES, is_hedge) {
            Some((admitted, limit)) => {
                if is_hedge {
                    crate::engine::events::hedging(call.name, call.engine.attempt());
                }
                let copy = start_copy(call.engine, call.op, admitted, limit, C::APPLIES);
                hedged.last_start = Some(copy.started);
                hedged.copies.push(copy);
            }
            None => hedged.no_more_hedges |= is_hedge,
        }
        return ControlFlow::Continue(());
    }
    let admitted = steps::admit(call.engine, breaker, throttle, full, C::APPLIES);
    let outcome = if let Some(reason) = admitted.rejection() {
        Err((call.reject)(reason))
    } else {
        // The call's span, named before its first attempt's (feature `spans`).
        #[cfg(feature = "spans")]
        if call.engine.attempt() == 0 {
            let name = call.name;
            call.engine.spans.open(|| name);
        }
        match steps::begin(call.engine, C::APPLIES) {
            Start::NotMade => Err(call.timeout.timed_out(Elapsed::new())),
            Start::Run(limit) => {
                let copy = start_copy(call.engine, call.op, admitted, limit, C::APPLIES);
                hedged.last_start = Some(copy.started);
                hedged.copies.push(copy);
                return ControlFlow::Continue(());
            }
        }
    };
    let guards = guards_of(breaker, throttle, admitted, budget);
    let decision = steps::decide_kept(call.engine, call.name, call.hooks, outcome, guards, last);
    match decision {
        Decision::Stop(out) => ControlFlow::Break(Some(out)),
        Decision::Retry(delay) => {
            set_timer(call.timer.as_mut(), delay);
            hedged.next = Next::Retry;
            ControlFlow::Break(None)
        }
    }
}

/// Makes the next attempt's future in its own context (it is attempt `engine.attempt()`),
/// unless fault injection (feature `testing`) draws a fault for it: then the copy waits the
/// fault's latency before its future is made, or fails unpolled (`can_fail`: the driver has a
/// timeout conversion), as every driver does (see `steps::Fault`). Each copy draws: the first
/// attempt, a retry, a hedge.
fn start_copy<Op, Fut>(
    engine: &Engine<'_>,
    op: &mut Op,
    admitted: Admitted,
    limit: Option<Duration>,
    can_fail: bool,
) -> HedgeCopy<Fut>
where
    Op: FnMut() -> Fut,
{
    let number = engine.attempt();
    #[cfg(feature = "testing")]
    if let Some(fault) = steps::fault(engine) {
        return start_faulty(engine, op, admitted, limit, can_fail, fault);
    }
    #[cfg(not(feature = "testing"))]
    let _ = can_fail;
    let started = Instant::now();
    let deadline = limit.map(|d| crate::engine::deadline::instant_after(started, d));
    // A copy's `context().remaining()` reads the deadline of the copy started last.
    engine.note_attempt_deadline(deadline);
    let fut = enter_copy(engine, number, || Box::pin(op()));
    HedgeCopy {
        fut: Some(fut),
        limit: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
        number,
        started,
        admitted,
        #[cfg(feature = "testing")]
        pre: None,
        #[cfg(feature = "testing")]
        injected: None,
    }
}

/// [`start_copy`] for a copy into which `fault` is injected (feature `testing`). The fault is
/// the copy's own, not the engine's (copies overlap): it is taken from the engine at once and
/// counted when the copy's outcome is decided. The timeout noted for an injected error at once
/// is noted again when the copy ends (another copy's outcome may be decided first).
#[cfg(feature = "testing")]
#[cold]
#[inline(never)]
fn start_faulty<Op, Fut>(
    engine: &Engine<'_>,
    op: &mut Op,
    admitted: Admitted,
    limit: Option<Duration>,
    can_fail: bool,
    fault: steps::Fault,
) -> HedgeCopy<Fut>
where
    Op: FnMut() -> Fut,
{
    let number = engine.attempt();
    let started = Instant::now();
    let deadline = limit.and_then(|d| crate::engine::deadline::deadline_after(started, d));
    engine.note_attempt_deadline(deadline);
    let plan = steps::plan_fault(engine, fault, deadline, can_fail);
    let injected = engine.take_injected();
    let (fut, limit, pre) = match plan {
        steps::FaultPlan::Run => (
            Some(enter_copy(engine, number, || Box::pin(op()))),
            deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
            None,
        ),
        steps::FaultPlan::Fail(_) => {
            engine.forget_class();
            (None, None, Some(steps::AfterWait::Fail))
        }
        steps::FaultPlan::Wait { until, then } => (
            None,
            Some(Box::pin(tokio::time::sleep_until(until))),
            Some(then),
        ),
    };
    HedgeCopy {
        fut,
        limit,
        number,
        started,
        admitted,
        pre,
        injected,
    }
}

/// Polls the wait of a fault injected into `copy` (feature `testing`): `Pending` while it runs;
/// then `Ready(Some(e))`, the copy fails with `e` unpolled (the engine noted a timeout), or
/// `Ready(None)`, its future is made now, under its time limit (fixed when it began), and is to
/// be polled. `Ready(None)` at once for a copy without a fault to wait.
#[cfg(feature = "testing")]
fn poll_fault<Op, Fut>(
    engine: &Engine<'_>,
    op: &mut Op,
    copy: &mut HedgeCopy<Fut>,
    cx: &mut Context<'_>,
) -> Poll<Option<Elapsed>>
where
    Op: FnMut() -> Fut,
{
    let Some(then) = copy.pre else {
        return Poll::Ready(None);
    };
    if let Some(wait) = copy.limit.as_mut() {
        std::task::ready!(wait.as_mut().poll(cx));
    }
    copy.pre = None;
    let failed = steps::after_fault_wait(engine, then);
    if let steps::AfterWait::Run(deadline) = then {
        copy.limit = deadline.map(|d| Box::pin(tokio::time::sleep_until(d)));
        copy.fut = Some(enter_copy(engine, copy.number, || Box::pin(op())));
    }
    Poll::Ready(failed)
}
