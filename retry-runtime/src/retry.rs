//! The closure API: `policy.retry(|| async { … }).when(…).notify(…).await`.

use std::fmt::Debug;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use crate::breaker::{CircuitBreaker, Permit};
use crate::budget::RetryBudget;
use crate::call::{self, Decision, FromBreakerOpen, FromElapsed, Guards, decide};
use crate::context::{self, Enter, RetryContext};
use crate::engine::Engine;
use crate::error::{BreakerOpen, Elapsed};
use crate::policy::RetryPolicy;

/// Retries every error (the default of [`Retry::when`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct EveryError;

/// Calls nothing before a retry (the default of [`Retry::notify`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

/// Uses the schedule's delay (the default of [`Retry::retry_after`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHint;

/// Which errors to retry: [`EveryError`] or an `FnMut(&E) -> bool`.
pub trait RetryWhen<E> {
    /// `true` to retry `error`.
    fn retry(&mut self, error: &E) -> bool;
}

impl<E> RetryWhen<E> for EveryError {
    fn retry(&mut self, _: &E) -> bool {
        true
    }
}

impl<E, F: FnMut(&E) -> bool> RetryWhen<E> for F {
    fn retry(&mut self, error: &E) -> bool {
        self(error)
    }
}

/// What to call before each retry's sleep: [`Silent`] or an `FnMut(&E, &RetryContext, Duration)`.
pub trait OnRetry<E> {
    /// Called with the error, the call's context and the coming sleep.
    fn on_retry(&mut self, error: &E, ctx: &RetryContext, delay: Duration);
}

impl<E> OnRetry<E> for Silent {
    fn on_retry(&mut self, _: &E, _: &RetryContext, _: Duration) {}
}

impl<E, F: FnMut(&E, &RetryContext, Duration)> OnRetry<E> for F {
    fn on_retry(&mut self, error: &E, ctx: &RetryContext, delay: Duration) {
        self(error, ctx, delay);
    }
}

/// A server's requested delay: [`NoHint`] or an `FnMut(&E) -> Option<Duration>`.
pub trait RetryAfter<E> {
    /// The delay the error asks for, if any.
    fn retry_after(&mut self, error: &E) -> Option<Duration>;
}

impl<E> RetryAfter<E> for NoHint {
    fn retry_after(&mut self, _: &E) -> Option<Duration> {
        None
    }
}

impl<E, F: FnMut(&E) -> Option<Duration>> RetryAfter<E> for F {
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        self(error)
    }
}

/// No circuit breaker (the default of [`Retry::circuit_breaker`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBreaker;

/// A circuit breaker every attempt passes through, and how its rejection becomes an `E`.
#[derive(Debug)]
pub struct Breaker<'b, E> {
    breaker: &'b CircuitBreaker,
    reject: fn(BreakerOpen) -> E,
}

impl<E> Clone for Breaker<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Breaker<'_, E> {}

/// The breaker of a [`Retry`], if any: [`NoBreaker`] or [`Breaker`].
pub trait BreakerSlot<E> {
    /// The breaker and the conversion of its rejection.
    fn get(&self) -> Option<Breaker<'_, E>>;
}

impl<E> BreakerSlot<E> for NoBreaker {
    fn get(&self) -> Option<Breaker<'_, E>> {
        None
    }
}

impl<E> BreakerSlot<E> for Breaker<'_, E> {
    fn get(&self) -> Option<Breaker<'_, E>> {
        Some(*self)
    }
}

impl RetryPolicy {
    /// Retries `op` (a closure making one attempt's future) under this policy.
    ///
    /// The per-attempt `timeout` turns a slow attempt into `E::from(Elapsed)`, so the error type
    /// must implement `From<Elapsed>` (`std::io::Error` does); `max_elapsed` bounds the whole call.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::io;
    /// use retry_runtime::{RetryPolicy, transient};
    ///
    /// let policy = RetryPolicy::builder().max_attempts(4).build().unwrap();
    /// let mut calls = 0;
    /// let out: io::Result<&str> = policy
    ///     .retry(|| {
    ///         calls += 1;
    ///         let n = calls;
    ///         async move { if n < 3 { Err(io::ErrorKind::ConnectionReset.into()) } else { Ok("ok") } }
    ///     })
    ///     .when(transient)
    ///     .notify(|e: &io::Error, ctx: &retry_runtime::RetryContext, d| {
    ///         println!("attempt {} failed ({e}); retrying in {d:?}", ctx.attempt());
    ///     })
    ///     .await;
    /// assert_eq!(out.unwrap(), "ok");
    /// assert_eq!(calls, 3);
    /// # }
    /// ```
    pub fn retry<Op>(&self, op: Op) -> Retry<'_, Op> {
        Retry {
            policy: self,
            op,
            when: EveryError,
            notify: Silent,
            hint: NoHint,
            breaker: NoBreaker,
            budget: None,
            name: "retry",
        }
    }
}

/// A retrying call being set up; `.await` it to run. Made by [`RetryPolicy::retry`].
#[must_use = "a retry does nothing until awaited"]
#[derive(Debug, Clone)]
pub struct Retry<'p, Op, W = EveryError, N = Silent, H = NoHint, B = NoBreaker> {
    policy: &'p RetryPolicy,
    op: Op,
    when: W,
    notify: N,
    hint: H,
    breaker: B,
    budget: Option<&'p RetryBudget>,
    name: &'static str,
}

impl<'p, Op, W, N, H, B> Retry<'p, Op, W, N, H, B> {
    /// Retries only the errors for which `predicate` is `true` (default: every error).
    pub fn when<P>(self, predicate: P) -> Retry<'p, Op, P, N, H, B> {
        let Retry {
            policy,
            op,
            notify,
            hint,
            breaker,
            budget,
            name,
            ..
        } = self;
        Retry {
            policy,
            op,
            when: predicate,
            notify,
            hint,
            breaker,
            budget,
            name,
        }
    }

    /// Calls `f(error, context, delay)` before each retry's sleep.
    pub fn notify<F>(self, f: F) -> Retry<'p, Op, W, F, H, B> {
        let Retry {
            policy,
            op,
            when,
            hint,
            breaker,
            budget,
            name,
            ..
        } = self;
        Retry {
            policy,
            op,
            when,
            notify: f,
            hint,
            breaker,
            budget,
            name,
        }
    }

    /// Uses the delay an error asks for (a Retry-After header, gRPC pushback) instead of the
    /// schedule's, still capped at `max_delay` and bounded by `max_elapsed`.
    pub fn retry_after<F>(self, f: F) -> Retry<'p, Op, W, N, F, B> {
        let Retry {
            policy,
            op,
            when,
            notify,
            breaker,
            budget,
            name,
            ..
        } = self;
        Retry {
            policy,
            op,
            when,
            notify,
            hint: f,
            breaker,
            budget,
            name,
        }
    }

    /// Passes every attempt through `breaker`: while it is open, the call ends at once with
    /// `E::from(BreakerOpen)`, without retrying.
    pub fn circuit_breaker<E: FromBreakerOpen>(
        self,
        breaker: &'p CircuitBreaker,
    ) -> Retry<'p, Op, W, N, H, Breaker<'p, E>> {
        let Retry {
            policy,
            op,
            when,
            notify,
            hint,
            budget,
            name,
            ..
        } = self;
        let breaker = Breaker {
            breaker,
            reject: E::from,
        };
        Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
        }
    }

    /// Pays each retry from `budget` (and each success back into it): when it cannot pay, the
    /// call ends with its last error.
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Labels the call in events (default `"retry"`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}

impl<'p, Op, Fut, T, E, W, N, H, B> IntoFuture for Retry<'p, Op, W, N, H, B>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: FromElapsed + Debug,
    W: RetryWhen<E>,
    N: OnRetry<E>,
    H: RetryAfter<E>,
    B: BreakerSlot<E>,
{
    type Output = Result<T, E>;
    type IntoFuture = RetryFuture<'p, Op, Fut, W, N, H, B>;

    fn into_future(self) -> Self::IntoFuture {
        RetryFuture {
            // The clock starts with the first attempt, not here: the future may wait before it
            // is first polled.
            engine: Engine::unstarted(self.policy),
            name: self.name,
            op: self.op,
            when: self.when,
            notify: self.notify,
            hint: self.hint,
            breaker: self.breaker,
            budget: self.budget,
            permit: None,
            attempt: None,
            timer: None,
        }
    }
}

pin_project! {
    /// The future of a [`Retry`]. While an attempt runs, `timer` is its time limit (if any);
    /// between attempts it is the backoff sleep.
    #[must_use = "futures do nothing unless awaited"]
    pub struct RetryFuture<'p, Op, Fut, W, N, H, B> {
        engine: Engine<'p>,
        name: &'static str,
        op: Op,
        when: W,
        notify: N,
        hint: H,
        breaker: B,
        budget: Option<&'p RetryBudget>,
        // The breaker's leave for the attempt running now.
        permit: Option<Permit>,
        #[pin]
        attempt: Option<Fut>,
        #[pin]
        timer: Option<Sleep>,
    }
}

impl<Op, Fut, T, E, W, N, H, B> Future for RetryFuture<'_, Op, Fut, W, N, H, B>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: FromElapsed + Debug,
    W: RetryWhen<E>,
    N: OnRetry<E>,
    H: RetryAfter<E>,
    B: BreakerSlot<E>,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        loop {
            if let Some(fut) = this.attempt.as_mut().as_pin_mut() {
                let polled = {
                    let _current = Enter::new(this.engine);
                    fut.poll(cx)
                };
                let outcome = match polled {
                    Poll::Ready(outcome) => outcome,
                    Poll::Pending => match this.timer.as_mut().as_pin_mut().map(|t| t.poll(cx)) {
                        Some(Poll::Ready(())) => {
                            context::mark_timed_out();
                            Err(E::from(Elapsed::new()))
                        }
                        _ => return Poll::Pending,
                    },
                };
                this.attempt.set(None);
                let mut guards = Guards::NONE;
                if let Some(Breaker { breaker, .. }) = this.breaker.get() {
                    guards = guards.breaker(breaker, this.permit.take());
                }
                if let Some(budget) = *this.budget {
                    guards = guards.budget(budget);
                }
                let (when, hint, notify) = (&mut *this.when, &mut *this.hint, &mut *this.notify);
                match decide(
                    this.engine,
                    this.name,
                    outcome,
                    |e| when.retry(e),
                    |_| false,
                    |e| hint.retry_after(e),
                    |e, ctx, d| notify.on_retry(e, ctx, d),
                    guards,
                ) {
                    Decision::Return(outcome) => {
                        this.timer.set(None);
                        return Poll::Ready(outcome);
                    }
                    Decision::Sleep(delay) => set_timer(this.timer.as_mut(), delay),
                }
            } else {
                if this.engine.attempt() > 0 {
                    // Between attempts: the timer is the backoff sleep.
                    if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                        ready!(sleep.poll(cx));
                    }
                }
                if let Some(Breaker { breaker, reject }) = this.breaker.get() {
                    match breaker.try_acquire() {
                        Ok(permit) => *this.permit = Some(permit),
                        Err(open) => {
                            // Rejected: no attempt is made, and the call ends (never retried).
                            let error = call::rejected(this.engine, this.name, reject(open));
                            return Poll::Ready(Err(error));
                        }
                    }
                }
                if this.engine.begin_attempt() == 1 && this.engine.policy().max_elapsed().is_some()
                {
                    this.engine.start_or(Instant::now);
                }
                let fut = {
                    let _current = Enter::new(this.engine);
                    (this.op)()
                };
                this.attempt.set(Some(fut));
                match this
                    .engine
                    .attempt_timeout_within(Instant::now, context::inherited_deadline())
                {
                    Some(limit) => set_timer(this.timer.as_mut(), limit),
                    None => this.timer.set(None),
                }
            }
        }
    }
}

/// Points the one timer at `now + delay`, reusing its registration when it exists.
fn set_timer(mut timer: Pin<&mut Option<Sleep>>, delay: Duration) {
    match timer.as_mut().as_pin_mut() {
        Some(sleep) => match Instant::now().checked_add(delay) {
            Some(deadline) => sleep.reset(deadline),
            None => timer.set(Some(tokio::time::sleep(delay))),
        },
        None => timer.set(Some(tokio::time::sleep(delay))),
    }
}
