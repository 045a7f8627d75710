//! The attempt loop of a closure call: [`RetryFuture`], what `.await` on a [`Retry`] runs.

use std::fmt::Debug;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::guard_slot::{Breaker, BreakerSlot, admitted_guards};
use super::retry::Retry;
use crate::drivers::hedged::{HedgeCall, Hedged, poll_hedged};
use crate::drivers::kept::{Keep, KeepsOutcome};
use crate::drivers::timed::{poll_attempt, set_timer, set_timer_at};
use crate::drivers::timeout::{ElapsedInto, TimeoutInto};
use crate::engine::context::enter;
use crate::engine::hooks::Hooks;
use crate::engine::state::{Decision, Engine, Start};
use crate::engine::steps;
use crate::error::Elapsed;
use crate::guards::Admitted;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::{Bulkhead, CallSlot};

impl<'p, Op, Fut, T, E, K, B, C> IntoFuture for Retry<'p, Op, K, B, C>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    K: Hooks<T, E>,
    B: BreakerSlot<E>,
    C: TimeoutInto<E>,
{
    type Output = Result<T, E>;
    type IntoFuture = RetryFuture<'p, Op, Fut, K, B, C>;

    fn into_future(self) -> Self::IntoFuture {
        RetryFuture {
            engine: Engine::new(self.policy),
            last: Default::default(),
            name: self.name,
            op: self.op,
            hooks: self.hooks,
            breaker: self.breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            timeout: self.timeout,
            admitted: Admitted::NOT_ASKED,
            slot: CallSlot::Untaken,
            done: false,
            lingering: false,
            hedged: None,
            attempt: None,
            limit: AttemptLimit::Unlimited,
            timer: None,
        }
    }
}

pin_project! {
    #[project = RetryFutureProj]
    /// The future of a [`Retry`](crate::Retry). While an attempt runs, `timer` is its time limit (if any, and
    /// only once the attempt has answered `Pending`: see `limit`); between attempts it is the
    /// backoff sleep.
    #[must_use = "futures do nothing unless awaited"]
    pub struct RetryFuture<'p, Op, Fut: Future, K, B: KeepsOutcome, C = ElapsedInto> {
        engine: Engine<'p>,
        // The last attempt's outcome while a retry waits, when a breaker or a throttle may turn
        // that retry away (the call then ends with it: `steps::decide_keeping`), and during a
        // long-polling wait; no field at all in a slot without such a guard nor
        // `long_polling_wait`.
        last: B::Kept<Fut::Output>,
        name: &'static str,
        op: Op,
        hooks: K,
        breaker: B,
        budget: Option<&'p RetryBudget>,
        bulkhead: Option<&'p Bulkhead>,
        timeout: C,
        // What the guards said about the attempt running now.
        admitted: Admitted,
        // The bulkhead's slot, held from before the first attempt to the end of the call.
        slot: CallSlot<'p>,
        // The call has returned: polling again is a bug, never another round of attempts.
        done: bool,
        // The call gave up and waits on `timer` before it returns its outcome, kept in `last`
        // (a long-polling policy whose retry the budget refused: `Engine::linger`).
        lingering: bool,
        // A hedged call's copies in flight (a policy with `hedge_after`); then `attempt` is
        // unused and `timer` is the next start's (a hedge or a retry).
        hedged: Option<Box<Hedged<Fut>>>,
        #[pin]
        attempt: Option<Fut>,
        // The running attempt's time limit, and whether `timer` is armed for it yet.
        limit: AttemptLimit,
        #[pin]
        timer: Option<Sleep>,
    }
}

impl<'p, Op, Fut: Future, K, B: KeepsOutcome, C> RetryFuture<'p, Op, Fut, K, B, C> {
    /// The call's engine: its context (key, attempts made) for a `#[recover]` fallback run once
    /// the call has ended (see [`Call::recover_after`](crate::__private::Call::recover_after)).
    pub(crate) fn engine(self: Pin<&mut Self>) -> &mut Engine<'p> {
        self.project().engine
    }
}

impl<Op, Fut, T, E, K, B, C> Future for RetryFuture<'_, Op, Fut, K, B, C>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    K: Hooks<T, E>,
    B: BreakerSlot<E>,
    C: TimeoutInto<E>,
{
    type Output = Result<T, E>;

    #[allow(
        clippy::too_many_lines,
        reason = "the engine's steps, in order, in one loop"
    )]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        assert!(!*this.done, "`RetryFuture` polled after completion");
        if this.hedged.is_none()
            && this.engine.attempt() == 0
            && this.engine.policy().hedge_after().is_some()
        {
            *this.hedged = Some(Box::default());
        }
        if let Some(hedged) = this.hedged.as_deref_mut() {
            let guards = this.breaker.get();
            let mut call = HedgeCall {
                engine: &mut *this.engine,
                name: this.name,
                op: &mut *this.op,
                hooks: &mut *this.hooks,
                breaker: guards.and_then(Breaker::circuit),
                throttle: guards.and_then(Breaker::throttle),
                reject: |reason| match guards {
                    Some(g) => g.reject(reason),
                    None => unreachable!("reattempt: a rejection without a guard"),
                },
                budget: *this.budget,
                timeout: &mut *this.timeout,
                timer: this.timer.as_mut(),
            };
            let (bulkhead, slot) = (*this.bulkhead, &mut *this.slot);
            let poll_slot = |engine: &Engine<'_>, cx: &mut Context<'_>| match bulkhead {
                Some(bulkhead) => steps::poll_slot(bulkhead, slot, engine, C::APPLIES, cx),
                None => Poll::Ready(false),
            };
            let out = ready!(poll_hedged(
                &mut call,
                hedged,
                this.last.slot(),
                poll_slot,
                cx
            ));
            this.timer.set(None);
            // The call is over: its bulkhead slot (one for all its copies) is free for another.
            *this.slot = CallSlot::Untaken;
            *this.done = true;
            return Poll::Ready(out);
        }
        // An attempt that fault injection failed, not made (feature `testing`; always `None`
        // without).
        let mut injected_failure: Option<Elapsed> = None;
        loop {
            if *this.lingering {
                // The call is over; its outcome waits in `last` for the timer (long polling).
                if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                    ready!(sleep.poll(cx));
                }
                this.timer.set(None);
                *this.slot = CallSlot::Untaken;
                *this.done = true;
                let kept = this.last.slot().and_then(Option::take);
                return Poll::Ready(kept.expect("reattempt: a lingering call keeps its outcome"));
            }
            // The engine's steps, in order: admit, begin, poll, decide, sleep.
            let outcome = if let Some(fut) = this.attempt.as_mut().as_pin_mut() {
                let timed = !matches!(this.limit, AttemptLimit::Unlimited);
                let (state, mut sleep) = (&mut *this.limit, this.timer.as_mut());
                let arm = move || {
                    if let AttemptLimit::Due(deadline) = *state {
                        set_timer_at(sleep.as_mut(), deadline);
                        *state = AttemptLimit::Armed;
                    }
                    sleep.as_pin_mut()
                };
                let outcome = match ready!(poll_attempt(this.engine, fut, timed, arm, cx)) {
                    Some(outcome) => outcome,
                    None => Err(this.timeout.timed_out(Elapsed::new())),
                };
                this.attempt.set(None);
                outcome
            } else if let Some(failed) = injected_failure.take() {
                // An attempt that fault injection failed (feature `testing`): not made.
                Err(this.timeout.timed_out(failed))
            } else {
                // A fault injected into the attempt begun (feature `testing`): its wait is over
                // when the timer fires; then the attempt fails, or is made under its limit.
                #[cfg(feature = "testing")]
                if let AttemptLimit::Injected(then) = *this.limit {
                    if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                        ready!(sleep.poll(cx));
                    }
                    *this.limit = AttemptLimit::Unlimited;
                    if let Some(failed) = steps::after_fault_wait(this.engine, then) {
                        injected_failure = Some(failed);
                        continue;
                    }
                    let steps::AfterWait::Run(deadline) = then else {
                        unreachable!("reattempt: only a fault to run returns no failure")
                    };
                    let fut = enter(this.engine, &mut *this.op);
                    this.attempt.set(Some(fut));
                    *this.limit = deadline.map_or(AttemptLimit::Unlimited, AttemptLimit::Due);
                    continue;
                }
                if this.engine.attempt() > 0 {
                    // Between attempts: the timer is the backoff sleep.
                    if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                        ready!(sleep.poll(cx));
                    }
                }
                // Ask the guards (`steps::admit`): the bulkhead's slot first, for the whole
                // call (a wait for one is polled here), then the breaker and the throttle.
                let full = match *this.bulkhead {
                    Some(bulkhead) => ready!(steps::poll_slot(
                        bulkhead,
                        this.slot,
                        this.engine,
                        C::APPLIES,
                        cx
                    )),
                    None => false,
                };
                let guards = this.breaker.get();
                *this.admitted = match guards {
                    Some(g) => {
                        steps::admit(this.engine, g.circuit(), g.throttle(), full, C::APPLIES)
                    }
                    None => Admitted::NOT_ASKED,
                };
                if let (Some(reason), Some(g)) = (this.admitted.rejection(), guards) {
                    // Turned away: no attempt is made; `decide` ends the call.
                    Err(g.reject(reason))
                } else {
                    // The call's span, named before its first attempt's (feature `spans`).
                    #[cfg(feature = "spans")]
                    if this.engine.attempt() == 0 {
                        let name = *this.name;
                        this.engine.spans.open(|| name);
                    }
                    let begun = if C::APPLIES {
                        steps::begin_timed(this.engine)
                    } else {
                        match steps::begin(this.engine, false) {
                            Start::Run(_) => Ok(None),
                            Start::NotMade => Err(steps::NotMade),
                        }
                    };
                    match begun {
                        Err(steps::NotMade) => Err(this.timeout.timed_out(Elapsed::new())),
                        Ok(deadline) => {
                            #[cfg(feature = "testing")]
                            if let Some(fault) = steps::fault(this.engine) {
                                match steps::plan_fault(this.engine, fault, deadline, C::APPLIES) {
                                    steps::FaultPlan::Run => {}
                                    steps::FaultPlan::Fail(failed) => {
                                        injected_failure = Some(failed);
                                        continue;
                                    }
                                    steps::FaultPlan::Wait { until, then } => {
                                        set_timer_at(this.timer.as_mut(), until);
                                        *this.limit = AttemptLimit::Injected(then);
                                        continue;
                                    }
                                }
                            }
                            let fut = enter(this.engine, &mut *this.op);
                            this.attempt.set(Some(fut));
                            *this.limit =
                                deadline.map_or(AttemptLimit::Unlimited, AttemptLimit::Due);
                            continue;
                        }
                    }
                }
            };
            let mut guards = admitted_guards(this.breaker.get(), *this.admitted);
            if let Some(budget) = *this.budget {
                guards = guards.budget(budget);
            }
            // Only a breaker or a throttle may turn the next retry away: without one, nothing
            // is kept across the backoff (the slot may exist only for `long_polling_wait`).
            let turns_away = this
                .breaker
                .get()
                .is_some_and(|g| g.circuit().is_some() || g.throttle().is_some());
            let last = this.last.slot().filter(|_| turns_away);
            let decision =
                steps::decide_kept(this.engine, *this.name, this.hooks, outcome, guards, last);
            match decision {
                Decision::Stop(outcome) => {
                    // Long polling: the outcome is returned once the refused retry's backoff is
                    // over, if the call has a place to keep it (see `long_polling_wait`).
                    if let Some(until) = this.engine.linger() {
                        if let Some(last) = this.last.slot() {
                            *last = Some(outcome);
                            set_timer_at(this.timer.as_mut(), until);
                            *this.lingering = true;
                            continue;
                        }
                        crate::engine::events::long_polling_skipped(this.name);
                    }
                    this.timer.set(None);
                    // The call is over: its bulkhead slot is free for another.
                    *this.slot = CallSlot::Untaken;
                    *this.done = true;
                    return Poll::Ready(outcome);
                }
                Decision::Retry(delay) => set_timer(this.timer.as_mut(), delay),
            }
        }
    }
}

/// An attempt's time limit in a [`RetryFuture`]: none, a deadline the timer is not armed for yet
/// (the attempt has not answered `Pending`), or the timer armed for it.
#[derive(Debug, Clone, Copy)]
enum AttemptLimit {
    Unlimited,
    Due(Instant),
    Armed,
    /// No attempt yet: the timer is an injected fault's wait (feature `testing`), then this.
    #[cfg(feature = "testing")]
    Injected(steps::AfterWait),
}
