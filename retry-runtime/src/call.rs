//! The driver of one retrying call, in the pieces the generated code of `#[retryable]` awaits:
//! [`Call::attempt`] wraps one run of the body, [`Call::decide`] asks the engine what follows,
//! [`Call::sleep`] waits. The closure API ([`Retry`](crate::Retry)) makes the same decisions
//! through [`decide`].

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use crate::breaker::{CircuitBreaker, Permit};
use crate::budget::RetryBudget;
use crate::context::{self, Enter, RetryContext};
use crate::engine::{Engine, GiveUpReason, Limits, Verdict};
use crate::error::Elapsed;
use crate::events;
use crate::policy::RetryPolicy;

/// What the retry loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<R> {
    /// End the loop with this outcome.
    Return(R),
    /// Sleep this long, then run the next attempt.
    Sleep(Duration),
}

/// Errors that a timed-out attempt can turn into. Implemented for every `E: From<Elapsed>`.
#[diagnostic::on_unimplemented(
    message = "`timeout` needs the error type `{Self}` to implement `From<reattempt::Elapsed>`",
    label = "a timed-out attempt must be converted into `{Self}`",
    note = "add a timeout variant to `{Self}` and `impl From<reattempt::Elapsed> for {Self}`"
)]
pub trait FromElapsed: From<Elapsed> {}

impl<E: From<Elapsed>> FromElapsed for E {}

/// Errors that a rejected call can turn into. Implemented for every `E: From<BreakerOpen>`.
#[diagnostic::on_unimplemented(
    message = "`circuit_breaker` needs the error type `{Self}` to implement `From<reattempt::BreakerOpen>`",
    label = "a call rejected by the open breaker must be converted into `{Self}`",
    note = "add a variant to `{Self}` and `impl From<reattempt::BreakerOpen> for {Self}`"
)]
pub trait FromBreakerOpen: From<crate::BreakerOpen> {}

impl<E: From<crate::BreakerOpen>> FromBreakerOpen for E {}

/// The breaker permit an attempt was made under, and the budget its retry is paid from.
///
/// ```
/// use retry_runtime::{CircuitBreaker, Guards, RetryBudget};
///
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let budget = RetryBudget::builder().build().unwrap();
/// let permit = breaker.try_acquire().ok();
/// let guards = Guards::NONE.breaker(&breaker, permit).budget(&budget);
/// # let _ = guards;
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub struct Guards<'b> {
    breaker: Option<(&'b CircuitBreaker, Option<Permit>)>,
    budget: Option<&'b RetryBudget>,
}

impl<'b> Guards<'b> {
    /// Neither breaker nor budget.
    pub const NONE: Guards<'static> = Guards {
        breaker: None,
        budget: None,
    };

    /// The attempt went through `breaker` under `permit`; `None` means the breaker rejected it.
    #[inline]
    pub fn breaker(self, breaker: &'b CircuitBreaker, permit: Option<Permit>) -> Self {
        Guards {
            breaker: Some((breaker, permit)),
            ..self
        }
    }

    /// Retries are paid from `budget`, and a success pays back into it.
    #[inline]
    pub fn budget(self, budget: &'b RetryBudget) -> Self {
        Guards {
            budget: Some(budget),
            ..self
        }
    }

    fn rejected(&self) -> bool {
        matches!(self.breaker, Some((_, None)))
    }

    /// Tells the breaker how the attempt went: a failure is an outcome the call retries (a
    /// non-retryable error means the dependency answered, so it counts as a success).
    fn record(&self, succeeded: bool) {
        if let Some((breaker, Some(permit))) = self.breaker {
            breaker.record(permit, succeeded);
        }
    }

    #[inline]
    fn succeeded(&self) {
        self.record(true);
        if let Some(budget) = self.budget {
            budget.deposit();
        }
    }
}

/// Errors that retries can log: every `E: Debug`.
#[diagnostic::on_unimplemented(
    message = "a retried error is logged with each retry, so `{Self}` must implement `Debug`",
    label = "`{Self}` is not `Debug`",
    note = "add `#[derive(Debug)]` to `{Self}`"
)]
pub trait LoggedError: Debug {}

impl<E: Debug> LoggedError for E {}

/// One logical call: the engine's state. (The call's name for events is passed to
/// [`decide`](Call::decide) as a constant, so that it takes no room in the call's future.)
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use retry_runtime::{Call, Decision, Guards, RetryPolicy};
///
/// static POLICY: RetryPolicy = match RetryPolicy::builder().max_attempts(3).build() {
///     Ok(p) => p,
///     Err(_) => panic!(),
/// };
/// let mut call = Call::new(&POLICY);
/// let mut failures = 2;
/// let out: Result<&str, &str> = loop {
///     let res = call.attempt(async { if failures > 0 { failures -= 1; Err("busy") } else { Ok("done") } }).await;
///     match call.decide("demo", res, |_| true, |_| false, |_| None, |_, _, _| {}, Guards::NONE) {
///         Decision::Return(r) => break r,
///         Decision::Sleep(d) => call.sleep(d).await,
///     }
/// };
/// assert_eq!(out, Ok("done"));
/// # }
/// ```
#[derive(Debug)]
pub struct Call<'p> {
    engine: Engine<'p>,
}

impl<'p> Call<'p> {
    /// A call following `policy`. Reads no clock unless the policy has `max_elapsed`.
    #[inline]
    pub fn new(policy: &'p RetryPolicy) -> Self {
        Call {
            engine: Engine::new(policy, Instant::now),
        }
    }

    /// Runs one attempt: `context()` names this call while `fut` is polled.
    #[inline]
    pub fn attempt<F: Future>(&mut self, fut: F) -> Attempt<'_, 'p, F> {
        self.engine.begin_attempt();
        Attempt {
            engine: &mut self.engine,
            fut,
        }
    }

    /// Runs one attempt under the policy's `timeout` (clipped to the `max_elapsed` deadline): an
    /// attempt that runs out of time is dropped and becomes `Err(E::from(Elapsed))`.
    pub fn attempt_timed<F, T, E>(&mut self, fut: F) -> TimedAttempt<'_, 'p, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromElapsed,
    {
        self.engine.begin_attempt();
        let timer = self
            .engine
            .attempt_timeout_within(Instant::now, context::inherited_deadline())
            .map(tokio::time::sleep);
        TimedAttempt {
            engine: &mut self.engine,
            fut,
            timer,
            timed_out: E::from,
        }
    }

    /// Runs one attempt of a blocking function: `context()` names this call while `f` runs.
    pub fn attempt_blocking<R>(&mut self, f: impl FnOnce() -> R) -> R {
        self.engine.begin_attempt();
        let _current = Enter::new(&self.engine);
        f()
    }

    /// Runs the `#[recover]` fallback of an async call: `context()` still names this call (its
    /// idempotency key, the attempts made, the time elapsed) while `fut` is polled. Starts no
    /// attempt.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::{Call, RetryPolicy, context};
    ///
    /// static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    /// let mut call = Call::new(&POLICY);
    /// let seen = call.attempt(async { context().unwrap().idempotency_key() }).await;
    /// let fallback = call.recover(async { context().unwrap().idempotency_key() }).await;
    /// assert_eq!(seen, fallback);
    /// # }
    /// ```
    #[inline]
    // No `F: Future` bound here: a fallback that is not a future is one error, at its `.await`.
    pub fn recover<F>(&mut self, fut: F) -> Recover<'_, 'p, F> {
        Recover {
            engine: &mut self.engine,
            fut,
        }
    }

    /// Runs the `#[recover]` fallback of a blocking call: `context()` still names this call
    /// while `f` runs. Starts no attempt.
    ///
    /// ```
    /// use retry_runtime::{Call, RetryPolicy, context};
    ///
    /// static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    /// let mut call = Call::new(&POLICY);
    /// let seen = call.attempt_blocking(|| context().unwrap().idempotency_key());
    /// assert_eq!(call.recover_blocking(|| context().unwrap().idempotency_key()), seen);
    /// ```
    pub fn recover_blocking<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let _current = Enter::new(&self.engine);
        f()
    }

    /// Decides what follows an attempt's outcome (`name` labels the call's events); see [`decide`].
    #[inline]
    #[allow(
        clippy::too_many_arguments,
        reason = "one per hook, called by generated code"
    )]
    pub fn decide<T, E: LoggedError>(
        &mut self,
        name: &'static str,
        outcome: Result<T, E>,
        retry_err: impl FnOnce(&E) -> bool,
        retry_ok: impl FnOnce(&T) -> bool,
        hint: impl FnOnce(&E) -> Option<Duration>,
        on_retry: impl FnOnce(&E, &RetryContext, Duration),
        guards: Guards<'_>,
    ) -> Decision<Result<T, E>> {
        decide(
            &mut self.engine,
            name,
            outcome,
            retry_err,
            retry_ok,
            hint,
            on_retry,
            guards,
        )
    }

    /// The sleep before the next attempt.
    #[inline]
    pub fn sleep(&self, delay: Duration) -> Sleep {
        tokio::time::sleep(delay)
    }

    /// The sleep before the next attempt of a blocking function.
    pub fn sleep_blocking(&self, delay: Duration) {
        std::thread::sleep(delay);
    }
}

/// What follows an attempt's outcome, per the engine's rules.
///
/// - `Ok(v)`: returned, unless `retry_ok(&v)` asks for a retry; when no retry is left, the last
///   `Ok` is returned.
/// - `Err(e)`: retried if `retry_err(&e)`, after `hint(&e)` (a server's requested delay) or the
///   schedule's delay; `on_retry` is called before the sleep. Otherwise returned.
/// - A breaker in `guards` hears whether the attempt failed (an outcome to retry) or not; an
///   attempt it rejected is returned at once. A budget in `guards` pays for each retry and is paid
///   back by a success. An inherited deadline (a retrying call around this one) bounds the sleeps.
///
/// On success with no `retry_ok`, this reads no clock and draws no random number.
#[inline]
#[allow(
    clippy::too_many_arguments,
    reason = "one per hook, called by generated code"
)]
pub fn decide<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: &'static str,
    outcome: Result<T, E>,
    retry_err: impl FnOnce(&E) -> bool,
    retry_ok: impl FnOnce(&T) -> bool,
    hint: impl FnOnce(&E) -> Option<Duration>,
    on_retry: impl FnOnce(&E, &RetryContext, Duration),
    guards: Guards<'_>,
) -> Decision<Result<T, E>> {
    // The success path, kept small so that it inlines into the caller's loop.
    events::attempt_made(name);
    match outcome {
        Ok(value) if !retry_ok(&value) => {
            guards.succeeded();
            events::call_finished(name, engine.attempt(), true);
            Decision::Return(Ok(value))
        }
        Ok(value) => after_ok_to_retry(engine, name, value, guards),
        Err(error) => after_error(engine, name, error, retry_err, hint, on_retry, guards),
    }
}

/// What else bounds this decision: the enclosing calls' deadline, the budget, a timeout.
fn limits<'b>(guards: &Guards<'b>) -> Limits<'b> {
    Limits {
        inherited_deadline: context::inherited_deadline(),
        budget: guards.budget,
        timed_out: context::take_timed_out(),
    }
}

/// A call the circuit breaker rejected: it ends at once with `error` (never retried), and the
/// give-up is reported.
pub(crate) fn rejected<E: Debug>(engine: &Engine<'_>, name: &'static str, error: E) -> E {
    events::giving_up(
        name,
        engine.attempt(),
        GiveUpReason::BreakerOpen,
        Some(&error),
    );
    error
}

/// An `Ok` value that `retry_if_ok` asked to retry.
#[cold]
#[inline(never)]
fn after_ok_to_retry<T, E>(
    engine: &mut Engine<'_>,
    name: &'static str,
    value: T,
    guards: Guards<'_>,
) -> Decision<Result<T, E>> {
    guards.record(false);
    let limits = limits(&guards);
    match engine.after_failure_within(true, None, Instant::now(), limits) {
        Verdict::Retry(delay) => {
            events::retrying_ok(name, engine.attempt(), delay);
            Decision::Sleep(delay)
        }
        Verdict::GiveUp(reason) => {
            events::giving_up(name, engine.attempt(), reason, None);
            Decision::Return(Ok(value))
        }
    }
}

/// An error: retried per the predicates and the engine, or returned.
#[cold]
#[inline(never)]
fn after_error<T, E: Debug>(
    engine: &mut Engine<'_>,
    name: &'static str,
    error: E,
    retry_err: impl FnOnce(&E) -> bool,
    hint: impl FnOnce(&E) -> Option<Duration>,
    on_retry: impl FnOnce(&E, &RetryContext, Duration),
    guards: Guards<'_>,
) -> Decision<Result<T, E>> {
    let limits = limits(&guards);
    if guards.rejected() {
        return Decision::Return(Err(rejected(engine, name, error)));
    }
    let retryable = retry_err(&error);
    guards.record(!retryable);
    let hint = if retryable { hint(&error) } else { None };
    match engine.after_failure_within(retryable, hint, Instant::now(), limits) {
        Verdict::Retry(delay) => {
            on_retry(&error, &RetryContext::of(engine), delay);
            events::retrying(name, engine.attempt(), delay, &error);
            Decision::Sleep(delay)
        }
        Verdict::GiveUp(reason) => {
            events::giving_up(name, engine.attempt(), reason, Some(&error));
            Decision::Return(Err(error))
        }
    }
}

pin_project! {
    /// One attempt of an async body; made by [`Call::attempt`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct Attempt<'a, 'p, F> {
        engine: &'a mut Engine<'p>,
        #[pin]
        fut: F,
    }
}

impl<F: Future> Future for Attempt<'_, '_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _current = Enter::new(this.engine);
        this.fut.poll(cx)
    }
}

pin_project! {
    /// One attempt of an async body under a time limit; made by [`Call::attempt_timed`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct TimedAttempt<'a, 'p, F, E> {
        engine: &'a mut Engine<'p>,
        #[pin]
        fut: F,
        #[pin]
        timer: Option<Sleep>,
        // Checked once where the attempt is made (`E: FromElapsed`), so that a missing
        // conversion is one error there rather than another at the `.await`.
        timed_out: fn(Elapsed) -> E,
    }
}

impl<F, T, E> Future for TimedAttempt<'_, '_, F, E>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let this = self.project();
        {
            let _current = Enter::new(this.engine);
            if let Poll::Ready(out) = this.fut.poll(cx) {
                return Poll::Ready(out);
            }
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => {
                context::mark_timed_out();
                Poll::Ready(Err((this.timed_out)(Elapsed::new())))
            }
            _ => Poll::Pending,
        }
    }
}

pin_project! {
    /// The `#[recover]` fallback of an async call, run in the call's context; made by
    /// [`Call::recover`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct Recover<'a, 'p, F> {
        engine: &'a mut Engine<'p>,
        #[pin]
        fut: F,
    }
}

impl<F: Future> Future for Recover<'_, '_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _current = Enter::new(this.engine);
        this.fut.poll(cx)
    }
}
