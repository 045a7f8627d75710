//! [`ResponseFuture`], a call of a [`RetryService`]: the attempt loop (the engine's steps, in
//! order), one attempt's `poll_ready` and `call`, and the hedged call's copies.
//!
//! [`RetryService`]: super::service::RetryService

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower_service::Service;

use super::guards::{BreakerFor, BudgetSlot, BulkheadFor, BulkheadSlot, SlotOf, ThrottleFor};
use super::hooks::ReadyAware;
use super::layer::Settings;
use super::replay::{Replay, RetryRequest};
use crate::drivers::hedged::{HedgeCall, Hedged, poll_hedged};
use crate::drivers::kept::{self, KeepsOutcome};
#[cfg(feature = "testing")]
use crate::drivers::timed::set_timer_at;
use crate::drivers::timed::{poll_copy, set_timer};
use crate::drivers::timeout::TimeoutInto;
use crate::engine::context::enter;
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::Hooks;
use crate::engine::state::{Decision, Detached, Engine, Start};
use crate::engine::steps;
use crate::error::Elapsed;
use crate::guards::bulkhead::CallSlot;
use crate::guards::{Admitted, Guards};

pin_project! {
    /// The future of a [`RetryService`] call. While an attempt runs, `timer` is its time limit
    /// (if any); between attempts it is the backoff sleep.
    ///
    /// [`RetryService`]: super::service::RetryService
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<S, Req, H, C, R, B, G, Q, L>
    where
        S: Service<Req>,
        B: KeepsOutcome,
        G: KeepsOutcome,
        Q: KeepsOutcome,
        L: BulkheadSlot,
    {
        settings: Arc<Settings<R, B, G, Q, L>>,
        engine: Detached,
        hooks: H,
        timeout: C,
        service: S,
        // The caller's request, copied for each attempt.
        request: Req,
        // This attempt's copy, until the service is ready for it.
        pending: Option<Req>,
        // The service said it is ready and has not been called since (the caller's
        // `poll_ready` readied it for the first attempt).
        ready: bool,
        // What the guards said about the attempt in progress.
        admitted: Admitted,
        // The bulkhead's slot, held from before the first attempt to the end of the call.
        slot: SlotOf<L>,
        // An attempt is in progress (readying the service, or awaiting its response).
        running: bool,
        // A fault injected into the attempt begun (feature `testing`) whose wait `timer` is.
        fault: FaultWait,
        done: bool,
        // A hedged call's copies in flight (a policy with `hedge_after`); then `pending`,
        // `running` and `attempt` are unused and `timer` is the next start's (a hedge or a
        // retry).
        // With the flag its copies set when a `poll_ready` failed.
        hedged: Option<Box<(Hedged<CopyAttempt<S, Req>>, Arc<AtomicBool>)>>,
        #[pin]
        attempt: Option<S::Future>,
        #[pin]
        timer: Option<Sleep>,
        // The last attempt's outcome while a retry waits, when the breaker or the throttle may
        // turn that retry away (the call then ends with it: `steps::decide_keeping`); nothing
        // without them (see `drivers::kept`).
        kept_for_breaker: B::Kept<Result<S::Response, S::Error>>,
        kept_for_throttle: Q::Kept<Result<S::Response, S::Error>>,
        // With a budget, the outcome a long-polling call returns once `timer` fires
        // (`Engine::linger`), while `lingering`.
        kept_for_budget: G::Kept<Result<S::Response, S::Error>>,
        lingering: bool,
    }
}

impl<S, Req, H, C, R, B, G, Q, L> ResponseFuture<S, Req, H, C, R, B, G, Q, L>
where
    S: Service<Req>,
    B: KeepsOutcome,
    G: KeepsOutcome,
    Q: KeepsOutcome,
    L: BulkheadSlot,
{
    /// A call of `service` (the one the caller readied) with `request`, not begun.
    #[inline]
    pub(super) fn new(
        settings: Arc<Settings<R, B, G, Q, L>>,
        hooks: H,
        timeout: C,
        service: S,
        request: Req,
    ) -> Self {
        ResponseFuture {
            settings,
            engine: Detached::new(),
            hooks,
            timeout,
            service,
            request,
            pending: None,
            ready: true,
            admitted: Admitted::NOT_ASKED,
            slot: CallSlot::Untaken,
            running: false,
            fault: FaultWait::default(),
            done: false,
            hedged: None,
            attempt: None,
            timer: None,
            kept_for_breaker: Default::default(),
            kept_for_throttle: Default::default(),
            kept_for_budget: Default::default(),
            lingering: false,
        }
    }
}

/// What a (non-hedged) attempt begun waits for before it is made: a fault injected into it
/// (feature `testing`), whose latency the call's `timer` is while `then` is set. Nothing
/// without the feature.
#[derive(Debug, Default, Clone, Copy)]
struct FaultWait {
    #[cfg(feature = "testing")]
    then: Option<steps::AfterWait>,
}

#[cfg(feature = "testing")]
impl FaultWait {
    /// Draws the fault of the attempt just begun, with time limit `limit` (see `steps::Fault`):
    /// `None`, make it now; `Some(Ok(()))`, `timer` is set to the fault's wait; `Some(Err(e))`,
    /// it fails at once with `e`, unpolled (`can_fail`: the call has a timeout conversion).
    fn begin(
        &mut self,
        engine: &Engine<'_>,
        limit: Option<Duration>,
        can_fail: bool,
        timer: Pin<&mut Option<Sleep>>,
    ) -> Option<Result<(), Elapsed>> {
        let fault = steps::fault(engine)?;
        let now = tokio::time::Instant::now();
        let deadline = limit.and_then(|d| crate::engine::deadline::deadline_after(now, d));
        // The limit runs from now, the latency included (`RetryContext::remaining`).
        engine.note_attempt_deadline(deadline);
        match steps::plan_fault(engine, fault, deadline, can_fail) {
            steps::FaultPlan::Run => None,
            steps::FaultPlan::Fail(failed) => Some(Err(failed)),
            steps::FaultPlan::Wait { until, then } => {
                set_timer_at(timer, until);
                self.then = Some(then);
                Some(Ok(()))
            }
        }
    }

    /// Polls the wait of a fault injected into the attempt begun (`timer`): `Ready(None)`, none;
    /// `Ready(Some(Err(e)))`, the attempt fails with `e`, unpolled; `Ready(Some(Ok(())))`, it is
    /// to be made now, `timer` set to its limit (fixed when it began).
    fn poll_wait(
        &mut self,
        engine: &Engine<'_>,
        mut timer: Pin<&mut Option<Sleep>>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(), Elapsed>>> {
        let Some(then) = self.then else {
            return Poll::Ready(None);
        };
        if let Some(sleep) = timer.as_mut().as_pin_mut() {
            ready!(sleep.poll(cx));
        }
        self.then = None;
        if let Some(failed) = steps::after_fault_wait(engine, then) {
            return Poll::Ready(Some(Err(failed)));
        }
        match then {
            steps::AfterWait::Run(Some(deadline)) => set_timer_at(timer, deadline),
            _ => timer.set(None),
        }
        Poll::Ready(Some(Ok(())))
    }
}

/// One attempt: `poll_ready` on the service, then `call`, then its response. Made for each poll
/// of the attempt, so that the driver's one timed poll serves it.
struct AttemptPoll<'a, S: Service<Req>, Req> {
    service: &'a mut S,
    pending: &'a mut Option<Req>,
    ready: &'a mut bool,
    future: Pin<&'a mut Option<S::Future>>,
    /// Set when the service's `poll_ready` failed (see [`ReadyAware`]).
    failed: &'a AtomicBool,
}

impl<S: Service<Req>, Req> Future for AttemptPoll<'_, S, Req> {
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(request) = this.pending.take() {
            if !*this.ready {
                match this.service.poll_ready(cx) {
                    Poll::Pending => {
                        *this.pending = Some(request);
                        return Poll::Pending;
                    }
                    // The service has failed (tower's contract): it is not asked again.
                    Poll::Ready(Err(e)) => {
                        this.failed.store(true, Ordering::Relaxed);
                        return Poll::Ready(Err(e));
                    }
                    Poll::Ready(Ok(())) => {}
                }
            }
            // Ready is used up by the call: the next attempt asks again.
            *this.ready = false;
            this.future.set(Some(this.service.call(request)));
        }
        match this.future.as_mut().as_pin_mut() {
            Some(future) => future.poll(cx),
            None => unreachable!("reattempt: an attempt without a request or a response"),
        }
    }
}

pin_project! {
    /// One copy of a hedged call: `poll_ready` on its own clone of the service (unless that
    /// clone is the one the caller readied), then `call`, then its response.
    struct CopyAttempt<S, Req>
    where
        S: Service<Req>,
    {
        service: S,
        pending: Option<Req>,
        ready: bool,
        // The call's flag: set when this copy's `poll_ready` failed.
        failed: Arc<AtomicBool>,
        #[pin]
        future: Option<S::Future>,
    }
}

impl<S: Service<Req>, Req> Future for CopyAttempt<S, Req> {
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let attempt = AttemptPoll {
            service: this.service,
            pending: this.pending,
            ready: this.ready,
            future: this.future,
            failed: this.failed,
        };
        std::pin::pin!(attempt).poll(cx)
    }
}

impl<S, Req, H, C, R, B, G, Q, L> Future for ResponseFuture<S, Req, H, C, R, B, G, Q, L>
where
    S: Service<Req> + Clone,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error>,
    C: TimeoutInto<S::Error>,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot + KeepsOutcome,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        assert!(!*this.done, "`ResponseFuture` polled after completion");
        let settings = &**this.settings;
        let mut engine = std::mem::take(this.engine).attach(&settings.policy);
        if this.hedged.is_none() && engine.attempt() == 0 && settings.policy.hedge_after().is_some()
        {
            *this.hedged = Some(Box::default());
        }
        let out = if let Some(hedged) = this.hedged.as_deref_mut() {
            drive_hedged(
                &mut engine,
                settings,
                this.hooks,
                this.timeout,
                this.service,
                this.request,
                this.ready,
                this.slot,
                hedged,
                kept::either(this.kept_for_breaker, this.kept_for_throttle),
                this.timer,
                cx,
            )
        } else {
            drive(
                &mut engine,
                settings,
                this.hooks,
                this.timeout,
                this.service,
                this.request,
                this.pending,
                this.ready,
                this.admitted,
                this.slot,
                this.running,
                this.fault,
                this.attempt,
                this.timer,
                kept::either(this.kept_for_breaker, this.kept_for_throttle),
                Linger {
                    kept: kept::Keep::slot(this.kept_for_budget),
                    on: this.lingering,
                },
                cx,
            )
        };
        *this.engine = engine.detach();
        if out.is_ready() {
            *this.done = true;
        }
        out
    }
}

/// The driver's loop (the engine's steps, in order: admit, begin, poll, decide, sleep), over the
/// projected fields of a [`ResponseFuture`].
#[allow(
    clippy::too_many_arguments,
    clippy::too_many_lines,
    reason = "the projected fields of the future; the engine's steps, in order, in one loop"
)]
#[inline]
fn drive<S, Req, H, C, R, B, G, Q, L>(
    engine: &mut Engine<'_>,
    settings: &Settings<R, B, G, Q, L>,
    hooks: &mut H,
    timeout: &mut C,
    service: &mut S,
    request: &Req,
    pending: &mut Option<Req>,
    ready: &mut bool,
    admitted: &mut Admitted,
    slot: &mut SlotOf<L>,
    running: &mut bool,
    #[cfg_attr(not(feature = "testing"), allow(unused_variables))] fault: &mut FaultWait,
    mut attempt: Pin<&mut Option<S::Future>>,
    mut timer: Pin<&mut Option<Sleep>>,
    mut last: Option<&mut Option<Result<S::Response, S::Error>>>,
    mut linger: Linger<'_, Result<S::Response, S::Error>>,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, S::Error>>
where
    S: Service<Req>,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error>,
    C: TimeoutInto<S::Error>,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot + KeepsOutcome,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    // An attempt that fault injection failed, not made (feature `testing`).
    let mut injected_failure: Option<Elapsed> = None;
    loop {
        if let Some(out) = ready!(linger.poll(timer.as_mut(), cx)) {
            *slot = CallSlot::Untaken;
            return Poll::Ready(out);
        }
        // Set (by the attempt that ends in this poll) when `poll_ready` failed.
        let failed = AtomicBool::new(false);
        let outcome = if let Some(failed) = injected_failure.take() {
            // An attempt that fault injection failed (feature `testing`): not made.
            Err(timeout.timed_out(failed))
        } else if *running {
            let limit = timer.as_mut().as_pin_mut();
            let attempt_poll = AttemptPoll {
                service: &mut *service,
                pending: &mut *pending,
                ready: &mut *ready,
                future: attempt.as_mut(),
                failed: &failed,
            };
            let polled = poll_copy(engine, 0, std::pin::pin!(attempt_poll), limit, cx);
            let outcome = match ready!(polled) {
                Some(outcome) => outcome,
                None => Err(timeout.timed_out(Elapsed::new())),
            };
            attempt.set(None);
            *pending = None;
            *running = false;
            outcome
        } else {
            // An injected fault's wait (feature `testing`): then fail unpolled, or make it.
            #[cfg(feature = "testing")]
            if let Some(waited) = ready!(fault.poll_wait(engine, timer.as_mut(), cx)) {
                injected_failure = waited.err();
                if injected_failure.is_none() {
                    *pending = enter(engine, || Some(settings.replay.replay(request)));
                    *running = true;
                }
                continue;
            }
            if engine.attempt() > 0
                && let Some(sleep) = timer.as_mut().as_pin_mut()
            {
                // Between attempts: the timer is the backoff sleep.
                ready!(sleep.poll(cx));
            }
            // Ask the guards (`steps::admit`): the bulkhead's slot first, for the whole call
            // (a wait for one is polled here), then the breaker and the throttle.
            let full = match settings.bulkhead.slots() {
                Some(slots) => ready!(steps::poll_slot(slots, slot, engine, C::APPLIES, cx)),
                None => false,
            };
            let (breaker, throttle) = (settings.breaker.breaker(), settings.throttle.throttle());
            *admitted = steps::admit(engine, breaker, throttle, full, C::APPLIES);
            if let Some(reason) = admitted.rejection() {
                // Turned away: no attempt is made; `decide` ends the call.
                Err(rejection(settings, reason))
            } else {
                // The call's span, named before its first attempt's (feature `spans`).
                #[cfg(feature = "spans")]
                if engine.attempt() == 0 {
                    let name = settings.name;
                    engine.spans.open(|| name);
                }
                match steps::begin(engine, C::APPLIES) {
                    Start::NotMade => Err(timeout.timed_out(Elapsed::new())),
                    Start::Run(limit) => {
                        // Fault injection (feature `testing`): a latency to wait, or a failure.
                        #[cfg(feature = "testing")]
                        match fault.begin(engine, limit, C::APPLIES, timer.as_mut()) {
                            Some(Err(failed)) => {
                                injected_failure = Some(failed);
                                continue;
                            }
                            Some(Ok(())) => continue,
                            None => {}
                        }
                        *pending = enter(engine, || Some(settings.replay.replay(request)));
                        *running = true;
                        arm_attempt_limit(engine, timer.as_mut(), limit);
                        continue;
                    }
                }
            }
        };
        let (breaker, throttle) = (settings.breaker.breaker(), settings.throttle.throttle());
        let mut guards = Guards::NONE.admitted(breaker, throttle, *admitted);
        if let Some(budget) = settings.budget.budget() {
            guards = guards.budget(budget);
        }
        let mut hooks = ReadyAware {
            hooks: &mut *hooks,
            failed: &failed,
            request,
            rule: &settings.replay,
            classified: false,
        };
        let decision = steps::decide_kept(
            engine,
            settings.name,
            &mut hooks,
            outcome,
            guards,
            last.as_deref_mut(),
        );
        match decision {
            Decision::Stop(mut outcome) => {
                settings.replay.finish(&mut outcome, engine.attempt());
                // Unless it waits first (long polling), the call is over: its bulkhead slot
                // is free for another.
                if let Err(outcome) = linger.hold(engine, outcome, timer.as_mut()) {
                    timer.set(None);
                    *slot = CallSlot::Untaken;
                    return Poll::Ready(outcome);
                }
            }
            Decision::Retry(delay) => set_timer(timer.as_mut(), delay),
        }
    }
}

/// A long-polling call's wait before it returns ([`Engine::linger`]): where its outcome is kept
/// meanwhile (a call with a budget keeps one), and whether it is waiting.
struct Linger<'a, O> {
    kept: Option<&'a mut Option<O>>,
    on: &'a mut bool,
}

impl<O> Linger<'_, O> {
    /// Keeps `outcome` until the engine's wait is over (`timer` set for it), or gives it back
    /// when the call returns at once.
    fn hold(
        &mut self,
        engine: &Engine<'_>,
        outcome: O,
        timer: Pin<&mut Option<Sleep>>,
    ) -> Result<(), O> {
        match (engine.linger(), self.kept.as_deref_mut()) {
            (Some(until), Some(kept)) => {
                *kept = Some(outcome);
                crate::drivers::timed::set_timer_at(timer, until);
                *self.on = true;
                Ok(())
            }
            _ => Err(outcome),
        }
    }

    /// The outcome once the wait is over (`Pending` while it runs); `None` when not waiting.
    fn poll(
        &mut self,
        mut timer: Pin<&mut Option<Sleep>>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<O>> {
        if !*self.on {
            return Poll::Ready(None);
        }
        if let Some(sleep) = timer.as_mut().as_pin_mut() {
            ready!(sleep.poll(cx));
        }
        timer.set(None);
        let kept = self.kept.as_deref_mut().and_then(Option::take);
        Poll::Ready(Some(
            kept.expect("reattempt: a lingering call keeps its outcome"),
        ))
    }
}

/// Points the call's timer at the end of the attempt just begun, if it has a time limit, and
/// notes that end for [`RetryContext::remaining`](crate::RetryContext::remaining).
fn arm_attempt_limit(
    engine: &Engine<'_>,
    mut timer: Pin<&mut Option<Sleep>>,
    limit: Option<Duration>,
) {
    if let Some(limit) = limit {
        let at = crate::engine::deadline::instant_after(tokio::time::Instant::now(), limit);
        engine.note_attempt_deadline(Some(at));
        crate::drivers::timed::set_timer_at(timer, at);
    } else {
        timer.set(None);
    }
}

/// The call's error for an attempt a guard turned away for `reason` (see `steps::admit`).
fn rejection<E, R, B, G, Q, L>(settings: &Settings<R, B, G, Q, L>, reason: GiveUpReason) -> E
where
    B: BreakerFor<E>,
    Q: ThrottleFor<E>,
    L: BulkheadFor<E>,
{
    match reason {
        GiveUpReason::BulkheadFull => settings.bulkhead.full(),
        GiveUpReason::BreakerOpen => settings.breaker.rejection(),
        _ => settings.throttle.shed(),
    }
}

/// A hedged call (a policy with `hedge_after`): the closure driver's loop
/// (`drivers::hedged::poll_hedged`), whose copies are [`CopyAttempt`]s. The first copy is made
/// by the service the caller readied; every later one (a hedge or a retry) by a fresh clone of
/// it, which it asks `poll_ready` first. Copies share the call's context (its key); each passes
/// the breaker and the throttle; the call holds one bulkhead slot for all of them.
#[allow(
    clippy::too_many_arguments,
    reason = "the projected fields of the future"
)]
fn drive_hedged<S, Req, H, C, R, B, G, Q, L>(
    engine: &mut Engine<'_>,
    settings: &Settings<R, B, G, Q, L>,
    hooks: &mut H,
    timeout: &mut C,
    service: &mut S,
    request: &Req,
    ready: &mut bool,
    slot: &mut SlotOf<L>,
    (hedged, failed): &mut (Hedged<CopyAttempt<S, Req>>, Arc<AtomicBool>),
    last: Option<&mut Option<Result<S::Response, S::Error>>>,
    mut timer: Pin<&mut Option<Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, S::Error>>
where
    S: Service<Req> + Clone,
    S::Error: Debug,
    H: Hooks<S::Response, S::Error>,
    C: TimeoutInto<S::Error>,
    R: Replay<Req> + RetryRequest<Req, S::Response, S::Error>,
    B: BreakerFor<S::Error>,
    G: BudgetSlot,
    Q: ThrottleFor<S::Error>,
    L: BulkheadFor<S::Error>,
{
    // Called in the copy's context (`start_copy`), so that `replay` sees its attempt and key.
    let mut op = || {
        let readied = std::mem::take(ready);
        let copy = if readied {
            let fresh = service.clone();
            std::mem::replace(service, fresh)
        } else {
            service.clone()
        };
        CopyAttempt {
            service: copy,
            pending: Some(settings.replay.replay(request)),
            ready: readied,
            failed: Arc::clone(failed),
            future: None,
        }
    };
    let mut call = HedgeCall {
        engine,
        name: settings.name,
        op: &mut op,
        hooks: &mut ReadyAware {
            hooks,
            failed,
            request,
            rule: &settings.replay,
            classified: false,
        },
        breaker: settings.breaker.breaker(),
        throttle: settings.throttle.throttle(),
        reject: |reason| rejection(settings, reason),
        budget: settings.budget.budget(),
        timeout,
        timer: timer.as_mut(),
    };
    let poll_slot = |engine: &Engine<'_>, cx: &mut Context<'_>| match settings.bulkhead.slots() {
        Some(slots) => steps::poll_slot(slots, slot, engine, C::APPLIES, cx),
        None => Poll::Ready(false),
    };
    let mut out = ready!(poll_hedged(&mut call, hedged, last, poll_slot, cx));
    settings.replay.finish(&mut out, engine.attempt());
    timer.set(None);
    // The call is over: its bulkhead slot (one for all its copies) is free for another.
    *slot = CallSlot::Untaken;
    Poll::Ready(out)
}
