//! The closure API: `policy.retry(|| async { … }).when(…).notify(…).await`.

use std::fmt::Debug;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use crate::drivers::call::{self, Decision, FromBreakerOpen, FromElapsed, Guards, decide};
use crate::engine::Engine;
use crate::engine::context::{self, Enter, RetryContext};
use crate::error::{BreakerOpen, Elapsed};
use crate::guards::breaker::{CircuitBreaker, Permit};
use crate::guards::budget::RetryBudget;
use crate::schedule::policy::RetryPolicy;

/// Retries every error (the default of [`Retry::when`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct EveryError;

/// Calls nothing before a retry (the default of [`Retry::notify`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

/// Uses the schedule's delay (the default of [`Retry::retry_after`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHint;

/// No error says it was a timeout (the default of [`Retry::timeout_if`]): only an attempt the
/// policy's own `timeout` cut is charged as one.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTimeoutIf;

/// Which errors say they were a timeout: [`NoTimeoutIf`] or an `FnMut(&E) -> bool`.
pub trait TimeoutIf<E> {
    /// `true` when `error` reports a timeout (an HTTP client's own read timeout).
    fn is_timeout(&mut self, error: &E) -> bool;
}

impl<E> TimeoutIf<E> for NoTimeoutIf {
    fn is_timeout(&mut self, _: &E) -> bool {
        false
    }
}

impl<E, F: FnMut(&E) -> bool> TimeoutIf<E> for F {
    fn is_timeout(&mut self, error: &E) -> bool {
        self(error)
    }
}

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

/// Makes a timed-out attempt's error with `E: From<Elapsed>` (the default of a [`Retry`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ElapsedInto;

/// Applies no per-attempt timeout, so the error type needs no conversion from [`Elapsed`]; set
/// by [`Retry::without_timeout`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTimeout;

/// How a [`Retry`] turns a timed-out attempt into its error type: [`ElapsedInto`] (with
/// `E: From<Elapsed>`), an `FnMut(Elapsed) -> E` given to [`Retry::timeout_into`], or
/// [`NoTimeout`].
#[diagnostic::on_unimplemented(
    message = "the closure API turns a timed-out attempt into `{E}` with `From<reattempt::Elapsed>`, which `{E}` lacks",
    label = "`{E}` cannot hold a timeout",
    note = "call `.without_timeout()` if this call needs no per-attempt timeout, or `.timeout_into(|elapsed| …)` to make a `{E}` from one"
)]
pub trait TimeoutInto<E> {
    /// Whether the policy's `timeout` is applied at all.
    const APPLIES: bool = true;

    /// The error of an attempt that ran out of time.
    fn timed_out(&mut self, elapsed: Elapsed) -> E;
}

impl<E: FromElapsed> TimeoutInto<E> for ElapsedInto {
    fn timed_out(&mut self, elapsed: Elapsed) -> E {
        E::from(elapsed)
    }
}

impl<E> TimeoutInto<E> for NoTimeout {
    const APPLIES: bool = false;

    fn timed_out(&mut self, _: Elapsed) -> E {
        unreachable!("reattempt: no attempt is timed without a timeout conversion")
    }
}

impl<E, F: FnMut(Elapsed) -> E> TimeoutInto<E> for F {
    fn timed_out(&mut self, elapsed: Elapsed) -> E {
        self(elapsed)
    }
}

impl RetryPolicy {
    /// Retries `op` (a closure making one attempt's future) under this policy.
    ///
    /// The per-attempt `timeout` turns a slow attempt into `E::from(Elapsed)`, so by default the
    /// error type must implement `From<Elapsed>` (`std::io::Error` does). The policy is a value
    /// known only at run time, so the compiler cannot tell whether it holds a `timeout`; rather
    /// than ignore one silently or fail at run time, an error type that cannot hold a timeout
    /// (`String`, `reqwest::Error`, `http::StatusCode`, which the orphan rule keeps from
    /// `From<Elapsed>`) says which it wants, once, where the call is written:
    /// [`.timeout_into(|elapsed| …)`](Retry::timeout_into) makes its error from the timeout, and
    /// [`.without_timeout()`](Retry::without_timeout) runs the attempts without a per-attempt limit.
    ///
    /// `max_elapsed` bounds the whole call: no sleep starts that would end at or past it, and a
    /// timed attempt is clipped to what remains (see [`RetryPolicyBuilder::max_elapsed`](crate::RetryPolicyBuilder::max_elapsed)).
    ///
    /// The future is fused the way futures combinators are: polling it after it returned panics
    /// ("polled after completion") rather than running the operation again.
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
    ///     .notify(|e, ctx, d| {
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
            timeout: ElapsedInto,
            timeout_if: NoTimeoutIf,
        }
    }
}

/// A retrying call being set up; `.await` it to run. Made by [`RetryPolicy::retry`].
#[must_use = "a retry does nothing until awaited"]
#[derive(Debug, Clone)]
pub struct Retry<
    'p,
    Op,
    W = EveryError,
    N = Silent,
    H = NoHint,
    B = NoBreaker,
    C = ElapsedInto,
    I = NoTimeoutIf,
> {
    policy: &'p RetryPolicy,
    op: Op,
    when: W,
    notify: N,
    hint: H,
    breaker: B,
    budget: Option<&'p RetryBudget>,
    name: &'static str,
    timeout: C,
    timeout_if: I,
}

impl<'p, Op, W, N, H, B, C, I> Retry<'p, Op, W, N, H, B, C, I> {
    /// Retries only the errors for which `predicate` is `true` (default: every error). The
    /// predicate's argument type is the operation's error type: no annotation needed.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::io;
    /// use retry_runtime::RetryPolicy;
    ///
    /// let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    /// let out: io::Result<()> = policy
    ///     .retry(|| async { Err(io::Error::from(io::ErrorKind::PermissionDenied)) })
    ///     .when(|e| e.kind() == io::ErrorKind::ConnectionReset)
    ///     .await;
    /// assert_eq!(out.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    /// # }
    /// ```
    pub fn when<P, Fut, T, E>(self, predicate: P) -> Retry<'p, Op, P, N, H, B, C, I>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        P: FnMut(&E) -> bool,
    {
        let Retry {
            policy,
            op,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout,
            timeout_if,
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
            timeout,
            timeout_if,
        }
    }

    /// Calls `f(error, context, delay)` before each retry's sleep.
    pub fn notify<F, Fut, T, E>(self, f: F) -> Retry<'p, Op, W, F, H, B, C, I>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        F: FnMut(&E, &RetryContext, Duration),
    {
        let Retry {
            policy,
            op,
            when,
            hint,
            breaker,
            budget,
            name,
            timeout,
            timeout_if,
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
            timeout,
            timeout_if,
        }
    }

    /// Makes the error of an attempt the policy's `timeout` cut with `f`, for an error type
    /// without `From<Elapsed>` (or to choose another variant than its `From` impl does).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use retry_runtime::RetryPolicy;
    ///
    /// let policy = RetryPolicy::builder()
    ///     .max_attempts(2)
    ///     .timeout(Duration::from_millis(10))
    ///     .build()
    ///     .unwrap();
    /// let out: Result<u32, String> = policy
    ///     .retry(|| std::future::pending())
    ///     .timeout_into(|elapsed| format!("gave up: {elapsed}"))
    ///     .await;
    /// assert!(out.unwrap_err().starts_with("gave up"));
    /// # }
    /// ```
    pub fn timeout_into<F, Fut, T, E>(self, f: F) -> Retry<'p, Op, W, N, H, B, F, I>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        F: FnMut(Elapsed) -> E,
    {
        let Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout_if,
            ..
        } = self;
        Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout: f,
            timeout_if,
        }
    }

    /// Runs the attempts without a per-attempt time limit, even if the policy sets `timeout`:
    /// for an error type that cannot hold a timeout (`reqwest::Error` has its own timeouts).
    /// `max_elapsed` still bounds the sleeps; with no timeout, an attempt is never cut.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use retry_runtime::RetryPolicy;
    ///
    /// let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    /// let out: Result<u32, String> = policy
    ///     .retry(|| async { Err("refused".to_string()) })
    ///     .without_timeout()
    ///     .when(|e| e != "refused")
    ///     .await;
    /// assert_eq!(out.unwrap_err(), "refused");
    /// # }
    /// ```
    ///
    /// Without it (or `.timeout_into`), such an error type does not compile, whatever the policy:
    ///
    /// ```compile_fail
    /// # async fn f() {
    /// let policy = retry_runtime::RetryPolicy::builder().build().unwrap();
    /// let out: Result<u32, String> = policy.retry(|| async { Err("refused".to_string()) }).await;
    /// # }
    /// ```
    pub fn without_timeout(self) -> Retry<'p, Op, W, N, H, B, NoTimeout, I> {
        let Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout_if,
            ..
        } = self;
        Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout: NoTimeout,
            timeout_if,
        }
    }

    /// Honours the delay an error asks for (a Retry-After header, gRPC pushback) as a floor: the
    /// sleep is the larger of the hint and the schedule's (jittered) delay, so a zero or past hint
    /// does not send every client back at once. The call never comes back before the server
    /// allows: a hint beyond `max_delay`, or one whose wait would end past `max_elapsed`, ends the
    /// call with that error ([`GiveUpReason::RetryAfterTooLong`](crate::GiveUpReason)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use retry_runtime::RetryPolicy;
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Throttled(Duration);
    ///
    /// let policy = RetryPolicy::builder().max_delay(Duration::from_secs(5)).build().unwrap();
    /// let out: Result<(), Throttled> = policy
    ///     .retry(|| async { Err(Throttled(Duration::from_secs(60))) })
    ///     .without_timeout()
    ///     .retry_after(|e| Some(e.0))
    ///     .await;
    /// // 60 s is beyond max_delay: the call ends at once rather than coming back early.
    /// assert_eq!(out, Err(Throttled(Duration::from_secs(60))));
    /// # }
    /// ```
    pub fn retry_after<F, Fut, T, E>(self, f: F) -> Retry<'p, Op, W, N, F, B, C, I>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        F: FnMut(&E) -> Option<Duration>,
    {
        let Retry {
            policy,
            op,
            when,
            notify,
            breaker,
            budget,
            name,
            timeout,
            timeout_if,
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
            timeout,
            timeout_if,
        }
    }

    /// Passes every attempt through `breaker`: while it is open, the call ends at once with
    /// `E::from(BreakerOpen)`, without retrying.
    pub fn circuit_breaker<E: FromBreakerOpen>(
        self,
        breaker: &'p CircuitBreaker,
    ) -> Retry<'p, Op, W, N, H, Breaker<'p, E>, C, I> {
        let Retry {
            policy,
            op,
            when,
            notify,
            hint,
            budget,
            name,
            timeout,
            timeout_if,
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
            timeout,
            timeout_if,
        }
    }

    /// Tells which errors report a timeout (an HTTP client's own read timeout), so that a retry
    /// after one costs the budget's `timeout_cost`, as after an attempt the policy's `timeout`
    /// cut, and the circuit breaker counts it as a failure even when it is not retried.
    /// [`is_timeout`](crate::is_timeout) asks [`Transient::is_timeout`](crate::Transient).
    /// Default: only the policy's own `timeout` counts. (`#[retryable]` asks `Transient` by
    /// itself whenever the error type implements it.)
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::io;
    /// use retry_runtime::{RetryBudget, RetryPolicy, is_timeout};
    ///
    /// let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    /// let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    /// let out: io::Result<()> = policy
    ///     .retry(|| async { Err(io::ErrorKind::TimedOut.into()) })
    ///     .timeout_if(is_timeout)
    ///     .budget(&budget)
    ///     .await;
    /// assert!(out.is_err());
    /// assert_eq!(budget.available(), 90, "one retry after a timeout: timeout_cost, 10");
    /// # }
    /// ```
    pub fn timeout_if<F, Fut, T, E>(self, f: F) -> Retry<'p, Op, W, N, H, B, C, F>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        F: FnMut(&E) -> bool,
    {
        let Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout,
            ..
        } = self;
        Retry {
            policy,
            op,
            when,
            notify,
            hint,
            breaker,
            budget,
            name,
            timeout,
            timeout_if: f,
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

impl<'p, Op, Fut, T, E, W, N, H, B, C, I> IntoFuture for Retry<'p, Op, W, N, H, B, C, I>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    W: RetryWhen<E>,
    N: OnRetry<E>,
    H: RetryAfter<E>,
    B: BreakerSlot<E>,
    C: TimeoutInto<E>,
    I: TimeoutIf<E>,
{
    type Output = Result<T, E>;
    type IntoFuture = RetryFuture<'p, Op, Fut, W, N, H, B, C, I>;

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
            timeout: self.timeout,
            timeout_if: self.timeout_if,
            permit: None,
            done: false,
            attempt: None,
            timer: None,
        }
    }
}

pin_project! {
    /// The future of a [`Retry`]. While an attempt runs, `timer` is its time limit (if any);
    /// between attempts it is the backoff sleep.
    #[must_use = "futures do nothing unless awaited"]
    pub struct RetryFuture<'p, Op, Fut, W, N, H, B, C = ElapsedInto, I = NoTimeoutIf> {
        engine: Engine<'p>,
        name: &'static str,
        op: Op,
        when: W,
        notify: N,
        hint: H,
        breaker: B,
        budget: Option<&'p RetryBudget>,
        timeout: C,
        timeout_if: I,
        // The breaker's leave for the attempt running now.
        permit: Option<Permit>,
        // The call has returned: polling again is a bug, never another round of attempts.
        done: bool,
        #[pin]
        attempt: Option<Fut>,
        #[pin]
        timer: Option<Sleep>,
    }
}

impl<Op, Fut, T, E, W, N, H, B, C, I> Future for RetryFuture<'_, Op, Fut, W, N, H, B, C, I>
where
    Op: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Debug,
    W: RetryWhen<E>,
    N: OnRetry<E>,
    H: RetryAfter<E>,
    B: BreakerSlot<E>,
    C: TimeoutInto<E>,
    I: TimeoutIf<E>,
{
    type Output = Result<T, E>;

    #[allow(
        clippy::too_many_lines,
        reason = "one state machine, kept in one place"
    )]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        assert!(!*this.done, "`RetryFuture` polled after completion");
        loop {
            let outcome = if let Some(fut) = this.attempt.as_mut().as_pin_mut() {
                let had_budget = tokio::task::coop::has_budget_remaining();
                let polled = {
                    let _current = Enter::new(this.engine);
                    fut.poll(cx)
                };
                let outcome = match polled {
                    Poll::Ready(outcome) => outcome,
                    Poll::Pending => match this
                        .timer
                        .as_mut()
                        .as_pin_mut()
                        .map(|t| call::poll_timer(t, had_budget, cx))
                    {
                        Some(Poll::Ready(())) => {
                            this.engine.mark_timed_out();
                            Err(this.timeout.timed_out(Elapsed::new()))
                        }
                        _ => return Poll::Pending,
                    },
                };
                this.attempt.set(None);
                outcome
            } else {
                if this.engine.attempt() > 0 {
                    // Between attempts: the timer is the backoff sleep.
                    if let Some(sleep) = this.timer.as_mut().as_pin_mut() {
                        ready!(sleep.poll(cx));
                    }
                }
                // With a timeout, no attempt starts once no time remains (a deadline inherited
                // from an enclosing call, spent on entry; or a late wake-up): it ends as timed out
                // without the operation being called, and the call ends.
                // The call's clock starts with its first attempt, so that the limit below is
                // clipped to `max_elapsed`; the limit is worked out once, for both uses.
                if this.engine.attempt() == 0 && this.engine.policy().max_elapsed().is_some() {
                    this.engine.start_or(Instant::now);
                }
                let limit = if C::APPLIES {
                    this.engine
                        .attempt_timeout_within(Instant::now, context::inherited_deadline())
                } else {
                    None
                };
                if limit == Some(Duration::ZERO) {
                    this.engine.begin_attempt();
                    this.engine.mark_not_made();
                    Err(this.timeout.timed_out(Elapsed::new()))
                } else {
                    if let Some(Breaker { breaker, reject }) = this.breaker.get() {
                        match breaker.try_acquire() {
                            Ok(permit) => *this.permit = Some(permit),
                            Err(open) => {
                                // Rejected: no attempt is made, and the call ends (never retried).
                                let error = call::rejected(
                                    this.engine,
                                    this.name,
                                    reject(open),
                                    *this.budget,
                                );
                                *this.done = true;
                                return Poll::Ready(Err(error));
                            }
                        }
                    }
                    this.engine.begin_attempt();
                    let fut = {
                        let _current = Enter::new(this.engine);
                        (this.op)()
                    };
                    this.attempt.set(Some(fut));
                    match limit {
                        Some(limit) => set_timer(this.timer.as_mut(), limit),
                        None => this.timer.set(None),
                    }
                    continue;
                }
            };
            let mut guards = Guards::NONE;
            if let Some(Breaker { breaker, .. }) = this.breaker.get() {
                guards = guards.breaker(breaker, this.permit.take());
            }
            if let Some(budget) = *this.budget {
                guards = guards.budget(budget);
            }
            let timeout_if = &mut *this.timeout_if;
            guards = guards.timed_out(outcome.as_ref().is_err_and(|e| timeout_if.is_timeout(e)));
            let (when, hint, notify) = (&mut *this.when, &mut *this.hint, &mut *this.notify);
            match decide(
                this.engine,
                *this.name,
                outcome,
                |e| when.retry(e),
                |_| false,
                |e| hint.retry_after(e),
                |e, ctx, d| notify.on_retry(e, ctx, d),
                guards,
            ) {
                Decision::Return(outcome) => {
                    this.timer.set(None);
                    *this.done = true;
                    return Poll::Ready(outcome);
                }
                Decision::Sleep(delay) => set_timer(this.timer.as_mut(), delay),
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
