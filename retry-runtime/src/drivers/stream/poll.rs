//! The attempts of a [`RetryStream`]: admit and open, hand on the items, time the gaps, decide
//! after a failure, sleep, and re-open from the checkpoint.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use tokio::time::Instant;

use super::phase::{HeldPermit, Phase};
use super::recover::RecoverStream;
use super::setup::RetryStream;
use crate::drivers::timeout::TimeoutInto;
use crate::engine::context::{enter, enter_recovering};
use crate::engine::events;
use crate::engine::hooks::Hooks;
use crate::engine::state::{Decision, earliest};
use crate::engine::steps;
use crate::error::{BreakerOpen, Elapsed};
use crate::guards::Guards;

/// What one step of the stream gives.
pub(super) enum Step<T, E> {
    /// An item for the consumer (an `Err` the stream gave up with is the last).
    Yield(Result<T, E>),
    /// An attempt (or the fallback) gave its stream.
    Opened,
    /// The stream ended.
    End,
}

impl<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R> RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R>
where
    Open: FnMut(C) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: Stream<Item = Result<T, E>>,
    Adv: FnMut(&mut C, &T),
    C: Clone,
    E: Debug,
    K: Hooks<(), E>,
    Tm: TimeoutInto<E>,
    R: RecoverStream<C, T, E>,
{
    /// Opens the stream's first attempt (with its retries), so that a stream that cannot be
    /// opened is an error here, as `client.get(url).send().await?` is, rather than the
    /// stream's only item. The stream it gives continues from there; its failures mid-stream
    /// are resumed as before.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let refused = policy
    ///         .retry_stream(|_: ()| async { Err::<stream::Empty<io::Result<u8>>, _>(io::Error::from(io::ErrorKind::ConnectionRefused)) })
    ///         .resume((), |_, _| {})
    ///         .opened()
    ///         .await;
    ///     assert_eq!(refused.unwrap_err().kind(), io::ErrorKind::ConnectionRefused);
    ///
    ///     let bytes = policy
    ///         .retry_stream(|_: ()| async { Ok(stream::iter([Ok::<u8, io::Error>(1), Ok(2)])) })
    ///         .resume((), |_, _| {})
    ///         .opened()
    ///         .await
    ///         .unwrap();
    ///     assert_eq!(bytes.map(Result::unwrap).collect::<Vec<_>>().await, [1, 2]);
    /// }
    /// ```
    pub fn opened(self) -> Opened<Self> {
        Opened(Some(self))
    }

    /// Runs the stream until it has an item, an end, or a stream opened.
    pub(super) fn step(&mut self, cx: &mut Context<'_>) -> Poll<Step<T, E>> {
        loop {
            match &mut self.phase {
                Phase::Idle => {
                    if let Some(step) = self.start_attempt() {
                        return Poll::Ready(step);
                    }
                }
                Phase::Opening(fut) => match enter(&self.engine, || {
                    self.timer.note_budget();
                    fut.as_mut().poll(cx)
                }) {
                    Poll::Ready(Ok(source)) => {
                        self.phase = Phase::Streaming(Box::pin(source));
                        self.arm_streaming();
                        return Poll::Ready(Step::Opened);
                    }
                    Poll::Ready(Err(error)) => {
                        if let Some(step) = self.failed(error) {
                            return Poll::Ready(step);
                        }
                    }
                    Poll::Pending => {
                        if !self.timer.fired(cx) {
                            return Poll::Pending;
                        }
                        self.engine.mark_timed_out();
                        let error = self.stalled();
                        if let Some(step) = self.failed(error) {
                            return Poll::Ready(step);
                        }
                    }
                },
                Phase::Streaming(source) => {
                    match enter(&self.engine, || {
                        self.timer.note_budget();
                        source.as_mut().poll_next(cx)
                    }) {
                        Poll::Ready(Some(Ok(item))) => {
                            if !self.progressed {
                                self.first_item();
                            }
                            self.advance_past(&item);
                            self.arm_streaming();
                            return Poll::Ready(Step::Yield(Ok(item)));
                        }
                        Poll::Ready(Some(Err(error))) => {
                            if let Some(step) = self.failed(error) {
                                return Poll::Ready(step);
                            }
                        }
                        Poll::Ready(None) => return Poll::Ready(self.ended()),
                        Poll::Pending => {
                            if !self.timer.fired(cx) {
                                return Poll::Pending;
                            }
                            self.engine.mark_timed_out();
                            let error = self.stalled();
                            if let Some(step) = self.failed(error) {
                                return Poll::Ready(step);
                            }
                        }
                    }
                }
                Phase::Sleeping => {
                    if !self.timer.fired(cx) {
                        return Poll::Pending;
                    }
                    self.phase = Phase::Idle;
                }
                Phase::Recovering(fut) => {
                    match ready!(enter_recovering(&self.engine, || fut.as_mut().poll(cx))) {
                        Ok(source) => {
                            self.phase = Phase::Recovered(Box::pin(source));
                            return Poll::Ready(Step::Opened);
                        }
                        Err(error) => {
                            self.phase = Phase::Done;
                            return Poll::Ready(Step::Yield(Err(error)));
                        }
                    }
                }
                Phase::Recovered(source) => {
                    let polled = enter_recovering(&self.engine, || source.as_mut().poll_next(cx));
                    let Some(item) = ready!(polled) else {
                        return Poll::Ready(self.end());
                    };
                    if let Ok(item) = &item {
                        self.advance_past(item);
                    }
                    return Poll::Ready(Step::Yield(item));
                }
                Phase::Done => return Poll::Ready(Step::End),
            }
        }
    }

    /// Admits and opens the next attempt; `Some` when the stream ends instead.
    fn start_attempt(&mut self) -> Option<Step<T, E>> {
        let timed = Tm::APPLIES;
        let breaker = self.settings.breaker.map(|(breaker, _)| breaker);
        let admitted = steps::admit(&self.engine, breaker, None, false, timed);
        if admitted.rejection().is_some() {
            let into = self.settings.breaker.map_or(
                rejected_without_breaker::<E> as fn(BreakerOpen) -> E,
                |(_, into)| into,
            );
            let guards = self.guards().admitted(breaker, None, admitted);
            let out = events::in_resumed_stream(self.resumes > 0, || {
                steps::decide_rejected(
                    &mut self.engine,
                    self.settings.name,
                    into(BreakerOpen::new()),
                    guards,
                    &mut self.last,
                )
            });
            return Some(match out {
                Err(error) => self.give_up(error)?,
                Ok(()) => self.end(),
            });
        }
        self.permit = HeldPermit { breaker, admitted };
        self.progressed = false;
        // The call's span, named before its first attempt's (feature `spans`).
        #[cfg(feature = "spans")]
        if self.engine.attempt() == 0 {
            let name = self.settings.name;
            self.engine.spans.open(|| name);
        }
        let limit = if timed {
            let Ok(limit) = steps::begin_timed(&mut self.engine) else {
                // No time remained for the attempt (`steps::NotMade`).
                self.timer.disarm();
                let error = self.timeout.timed_out(Elapsed::new());
                return self.failed(error);
            };
            limit
        } else {
            steps::begin(&mut self.engine, false);
            None
        };
        // An open that answers nothing for the idle limit has stalled as a silent source has.
        self.arm_limits(limit);
        // A resume is an open after the first one that is made: not one a guard turned away,
        // nor one no time remained for.
        if self.opened_before {
            self.resumes = self.resumes.saturating_add(1);
            events::stream_resumed(self.settings.name, self.resumes, self.engine.attempt());
        }
        self.opened_before = true;
        let checkpoint = self.checkpoint.clone();
        let open = &mut self.open;
        let fut = enter(&self.engine, || open(checkpoint));
        self.phase = Phase::Opening(Box::pin(fut));
        None
    }

    /// The budget, for a decision.
    fn guards(&self) -> Guards<'p> {
        match self.settings.budget {
            Some(budget) => Guards::NONE.budget(budget),
            None => Guards::NONE,
        }
    }

    /// The attempt's first item: the dependency is up. The breaker hears a success, and the
    /// budget gets back what the resume cost.
    fn first_item(&mut self) {
        self.progressed = true;
        let guards = self.permit.take(self.guards());
        guards.record(true);
        if let Some(budget) = self.settings.budget {
            self.engine.succeeded(budget);
        }
    }

    /// Moves the checkpoint past `item`. If `advance` panics, the stream is over (its source
    /// dropped in the unwind): a consumer that catches the panic and polls again gets the end,
    /// never the item after a lost one.
    fn advance_past(&mut self, item: &T) {
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        (self.advance)(&mut self.checkpoint, item);
        self.phase = phase;
    }

    /// The source ended cleanly: so does the stream.
    fn ended(&mut self) -> Step<T, E> {
        if !self.progressed {
            self.first_item();
        }
        // An attempt is counted as it ends: here, or by the decision after a failure. So is the
        // request a ratio budget counts, once per schedule.
        steps::first_attempt_ended(&self.engine, self.settings.budget, 0);
        events::attempt_made(self.settings.name);
        let (attempts, name) = (self.engine.attempt(), self.settings.name);
        let spans = &mut self.engine.spans;
        spans.named(|| name);
        spans.attempt_ended(0, crate::engine::spans::Ended::Answered);
        spans.finished(attempts, Ok(()));
        // Retried if it was ever re-opened, whatever the schedule's count.
        events::call_finished(self.settings.name, self.resumes.saturating_add(1), true);
        self.end()
    }

    fn end(&mut self) -> Step<T, E> {
        self.timer.disarm();
        self.phase = Phase::Done;
        Step::End
    }

    /// The error the timer's firing becomes: the idle limit's when it was the idle limit, or
    /// else the time limit's (the open's `timeout`, or the call's deadline).
    fn stalled(&mut self) -> E {
        match self.settings.idle {
            Some((_, into)) if self.idle_armed => into(Elapsed::new()),
            _ => self.timeout.timed_out(Elapsed::new()),
        }
    }

    /// The call's deadline while streaming, when a timeout can end the stream there.
    fn streaming_deadline(&self) -> Option<Instant> {
        if Tm::APPLIES {
            self.engine.deadline()
        } else {
            None
        }
    }

    /// Arms the timer of a stream that is delivering: the idle limit from now, or the call's
    /// deadline if sooner.
    fn arm_streaming(&mut self) {
        self.arm_limits(self.streaming_deadline());
    }

    /// Arms the timer at the earlier of the idle limit from now and `limit` (the open's time
    /// limit, or the call's deadline while streaming), noting which it is, and what
    /// `context().remaining()` says meanwhile (not a limit already spent).
    fn arm_limits(&mut self, limit: Option<Instant>) {
        let idle = self
            .settings
            .idle
            .and_then(|(idle, _)| Instant::now().checked_add(idle));
        let at = earliest(idle, limit);
        self.idle_armed = idle.is_some_and(|idle| limit.is_none_or(|limit| idle <= limit));
        self.engine.note_attempt_deadline(at);
        match at {
            Some(at) => self.timer.arm(at),
            None => self.timer.disarm(),
        }
    }

    /// An attempt failed with `error`: resume after the schedule's delay, or give up.
    fn failed(&mut self, error: E) -> Option<Step<T, E>> {
        self.timer.disarm();
        // Dropped now, not after the sleep: the connection is closed while the stream waits.
        self.phase = Phase::Idle;
        let progressed = std::mem::take(&mut self.progressed);
        if progressed && self.settings.progress_resets {
            self.engine.restart_schedule();
        }
        let guards = self.permit.take(self.guards());
        let keep = if self.settings.breaker.is_some() {
            Some(&mut self.last)
        } else {
            None
        };
        let resumed = self.resumes > 0;
        let decision = events::in_resumed_stream(resumed, || {
            steps::decide_kept(
                &mut self.engine,
                self.settings.name,
                &mut self.hooks,
                Err(error),
                guards,
                keep,
            )
        });
        match decision {
            Decision::Retry(delay) => {
                self.engine.forget_class();
                self.engine.forget_not_made();
                match Instant::now().checked_add(delay) {
                    Some(at) => self.timer.arm(at),
                    None => self.timer.disarm(),
                }
                self.phase = Phase::Sleeping;
                None
            }
            Decision::Stop(Err(error)) => self.give_up(error),
            Decision::Stop(Ok(())) => Some(self.end()),
        }
    }

    /// The stream gave up with `error`: its fallback continues it, or `error` is its last item.
    fn give_up(&mut self, error: E) -> Option<Step<T, E>> {
        self.timer.disarm();
        let error = match self.recover.take() {
            Some(fallback) => {
                let checkpoint = self.checkpoint.clone();
                match enter_recovering(&self.engine, || fallback.recover(error, checkpoint)) {
                    Ok(fut) => {
                        self.phase = Phase::Recovering(Box::pin(fut));
                        return None;
                    }
                    Err(error) => error,
                }
            }
            None => error,
        };
        self.phase = Phase::Done;
        Some(Step::Yield(Err(error)))
    }
}

/// A breaker rejection when the stream has no breaker: never made (`admit` asks no guard then).
fn rejected_without_breaker<E>(_: BreakerOpen) -> E {
    unreachable!("reattempt: a stream without a breaker was turned away")
}

impl<C, Open, Adv, Fut, S, T, E, K, Tm, R> Stream
    for RetryStream<'_, C, Open, Adv, Fut, S, T, E, K, Tm, R>
where
    Open: FnMut(C) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: Stream<Item = Result<T, E>>,
    Adv: FnMut(&mut C, &T),
    C: Clone,
    E: Debug,
    K: Hooks<(), E>,
    Tm: TimeoutInto<E>,
    R: RecoverStream<C, T, E>,
{
    type Item = Result<T, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T, E>>> {
        let this = self.get_mut();
        loop {
            match ready!(this.step(cx)) {
                Step::Yield(item) => return Poll::Ready(Some(item)),
                Step::End => return Poll::Ready(None),
                Step::Opened => {}
            }
        }
    }
}

/// The future of [`RetryStream::opened`]: the stream once its first attempt (or its fallback)
/// gave a stream, or the error it gave up with.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use futures_util::stream;
///     use reattempt::RetryPolicy;
///     use reattempt::runtime::Opened;
///
///     let policy = RetryPolicy::builder().build().unwrap();
///     let opening: Opened<_> = policy
///         .retry_stream(|(): ()| async { Ok::<_, std::io::Error>(stream::iter([Ok(1u8)])) })
///         .resume((), |(), _| {})
///         .opened();
///     assert_eq!(opening.await.unwrap().resumes(), 0);
/// }
/// ```
#[must_use = "futures do nothing unless awaited"]
#[derive(Debug)]
pub struct Opened<St>(Option<St>);

impl<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R> Future
    for Opened<RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R>>
where
    Open: FnMut(C) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: Stream<Item = Result<T, E>>,
    Adv: FnMut(&mut C, &T),
    C: Clone,
    E: Debug,
    K: Hooks<(), E>,
    Tm: TimeoutInto<E>,
    R: RecoverStream<C, T, E>,
{
    type Output = Result<RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let stream = this.0.as_mut().expect("`Opened` polled after completion");
        // Opened already (or over): nothing to wait for, and no item is taken.
        if matches!(
            stream.phase,
            Phase::Streaming(_) | Phase::Recovered(_) | Phase::Done
        ) {
            return Poll::Ready(Ok(this.0.take().expect("taken once")));
        }
        match ready!(stream.step(cx)) {
            // Before the first open nothing but a give-up is yielded.
            Step::Yield(Err(error)) => {
                this.0 = None;
                Poll::Ready(Err(error))
            }
            // Items come only from an opened stream, which was checked above.
            Step::Yield(Ok(_)) => unreachable!("reattempt: an item before the stream opened"),
            Step::Opened | Step::End => Poll::Ready(Ok(this.0.take().expect("taken once"))),
        }
    }
}
