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
use tokio::task::coop;
use tokio::time::{Instant, Sleep};

use crate::engine::context::{self, Enter, RetryContext};
use crate::engine::events::{self, Logged};
use crate::engine::{Engine, GiveUpReason, Limits, Verdict};
use crate::error::Elapsed;
use crate::guards::breaker::{CircuitBreaker, Permit};
use crate::guards::budget::RetryBudget;
use crate::schedule::policy::RetryPolicy;

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
    timed_out: bool,
}

impl<'b> Guards<'b> {
    /// Neither breaker nor budget.
    pub const NONE: Guards<'static> = Guards {
        breaker: None,
        budget: None,
        timed_out: false,
    };

    /// The attempt went through `breaker` under `permit`; `None` means the breaker rejected it.
    ///
    /// A rejected attempt is never made: the call ends at once with the rejection (the caller,
    /// or `#[recover]`, receives `E::from(BreakerOpen)`, as Resilience4j's
    /// `CallNotPermittedException` reaches a Spring `@Recover`), it is never retried, and if the
    /// budget had paid for it as a retry, those tokens are refunded: an attempt never made costs
    /// nothing.
    #[inline]
    pub fn breaker(self, breaker: &'b CircuitBreaker, permit: Option<Permit>) -> Self {
        Guards {
            breaker: Some((breaker, permit)),
            ..self
        }
    }

    /// Retries are paid from `budget`, and a success pays back into it (a retried call's last
    /// retry is refunded; a first-try success deposits `success_deposit`).
    #[inline]
    pub fn budget(self, budget: &'b RetryBudget) -> Self {
        Guards {
            budget: Some(budget),
            ..self
        }
    }

    /// The attempt's error says it was a timeout (an HTTP client's own read timeout; see
    /// [`Transient::is_timeout`](crate::Transient::is_timeout)): a retry after it costs the
    /// budget's `timeout_cost`, as after an attempt our own `timeout` cut.
    ///
    /// ```
    /// use std::io;
    /// use retry_runtime::{Guards, is_timeout};
    ///
    /// let outcome: Result<(), io::Error> = Err(io::ErrorKind::TimedOut.into());
    /// let guards = Guards::NONE.timed_out(outcome.as_ref().is_err_and(is_timeout));
    /// # let _ = guards;
    /// ```
    #[inline]
    pub fn timed_out(self, yes: bool) -> Self {
        Guards {
            timed_out: yes,
            ..self
        }
    }

    fn rejected(&self) -> bool {
        matches!(self.breaker, Some((_, None)))
    }

    /// Tells the breaker how the attempt went: a failure is an outcome the call retries or an
    /// attempt our `timeout` cut (any other non-retryable error means the dependency answered, so
    /// it counts as a success).
    fn record(&self, succeeded: bool) {
        if let Some((breaker, Some(permit))) = self.breaker {
            breaker.record(permit, succeeded);
        }
    }

    /// Gives the breaker's permit back unused: the attempt was not made.
    fn release(&self) {
        if let Some((breaker, Some(permit))) = self.breaker {
            breaker.release(permit);
        }
    }

    #[inline]
    fn succeeded(&self, engine: &Engine<'_>) {
        self.record(true);
        if let Some(budget) = self.budget {
            engine.succeeded(budget);
        }
    }
}

/// The name a call's events carry: a `&'static str`, or a function that gives it, called only
/// when an event names the call (so that a name worked out at run time costs nothing on the
/// success path unless the `metrics` feature counts it).
///
/// ```
/// use retry_runtime::CallName;
///
/// fn label(name: impl CallName) -> &'static str {
///     name.name()
/// }
/// assert_eq!(label("fetch"), "fetch");
/// assert_eq!(label(|| "fetch"), "fetch");
/// ```
pub trait CallName: Copy {
    /// The name.
    fn name(self) -> &'static str;
}

impl CallName for &'static str {
    #[inline]
    fn name(self) -> &'static str {
        self
    }
}

impl<F: Fn() -> &'static str + Copy> CallName for F {
    #[inline]
    fn name(self) -> &'static str {
        self()
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

    /// Runs one attempt under the policy's `timeout` (clipped to the `max_elapsed` deadline, the
    /// call's own or one inherited from an enclosing call): an attempt that runs out of time is
    /// dropped and becomes `Err(E::from(Elapsed))`. When no time remains at all, the body is
    /// never polled: the attempt is `Err(E::from(Elapsed))` at once, and [`decide`] ends the call
    /// with it (`GiveUpReason::DeadlineReached`) without telling the breaker or counting it.
    pub fn attempt_timed<F, T, E>(&mut self, fut: F) -> TimedAttempt<'_, 'p, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromElapsed,
    {
        self.engine.begin_attempt();
        let limit = self
            .engine
            .attempt_timeout_within(Instant::now, context::inherited_deadline());
        let spent = limit == Some(Duration::ZERO);
        TimedAttempt {
            engine: &mut self.engine,
            fut,
            timer: if spent {
                None
            } else {
                limit.map(tokio::time::sleep)
            },
            spent,
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
        name: impl CallName,
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

    /// The sleep before the next attempt of a blocking function: `std::thread::sleep`, made safe
    /// for a tokio runtime the function may be called on.
    ///
    /// - Outside a runtime (or on a `spawn_blocking` thread): a plain sleep.
    /// - On a multi-thread runtime's worker: the sleep runs under
    ///   [`tokio::task::block_in_place`], which hands the worker's other tasks to another thread,
    ///   so they are not frozen for up to `max_delay`.
    /// - On a current-thread runtime (or any other flavor) nothing can run the thread's other
    ///   tasks while it sleeps, and `block_in_place` would panic: it sleeps anyway, and the call
    ///   logs one `WARN` event (at its first sleep) saying so. Call such a function from
    ///   `tokio::task::spawn_blocking`, or make it `async`. (On a `spawn_blocking` thread of a
    ///   current-thread runtime the sleep is harmless, but the warning is logged there too: tokio
    ///   has no stable way to tell that thread from the runtime's own.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::{Call, RetryPolicy};
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let mut call = Call::new(&policy);
    /// call.attempt_blocking(|| ());
    /// call.sleep_blocking(Duration::from_millis(1)); // no runtime here: a plain sleep
    /// ```
    pub fn sleep_blocking(&self, delay: Duration) {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => std::thread::sleep(delay),
            Ok(RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| std::thread::sleep(delay));
            }
            Ok(_) => {
                if self.engine.attempt() <= 1 {
                    events::blocking_sleep_on_current_thread(delay);
                }
                std::thread::sleep(delay);
            }
        }
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
    name: impl CallName,
    outcome: Result<T, E>,
    retry_err: impl FnOnce(&E) -> bool,
    retry_ok: impl FnOnce(&T) -> bool,
    hint: impl FnOnce(&E) -> Option<Duration>,
    on_retry: impl FnOnce(&E, &RetryContext, Duration),
    guards: Guards<'_>,
) -> Decision<Result<T, E>> {
    // The success path, kept small so that it inlines into the caller's loop. An attempt the
    // breaker rejected was not made: it is counted (or not) in `after_error`.
    match outcome {
        Ok(value) if !retry_ok(&value) => {
            events::attempt_made(name);
            guards.succeeded(engine);
            events::call_finished(name, engine.attempt(), true);
            Decision::Return(Ok(value))
        }
        Ok(value) => {
            events::attempt_made(name);
            after_ok_to_retry(engine, name.name(), value, guards)
        }
        Err(error) => after_error(
            engine,
            name.name(),
            error,
            retry_err,
            hint,
            on_retry,
            guards,
        ),
    }
}

/// What else bounds this decision: the enclosing calls' deadline, the budget, a timeout.
fn limits<'b>(engine: &Engine<'_>, guards: &Guards<'b>) -> Limits<'b> {
    Limits {
        inherited_deadline: context::inherited_deadline(),
        budget: guards.budget,
        timed_out: engine.take_timed_out() | guards.timed_out,
    }
}

/// A call the circuit breaker rejected: it ends at once with `error` (never retried), the give-up
/// is reported, and what the budget was paid for this never-made attempt is refunded. Both drivers
/// ask the breaker before the attempt begins, so the attempt that was not made is the one after
/// `engine.attempt()`.
pub(crate) fn rejected<E: Debug>(
    engine: &Engine<'_>,
    name: &'static str,
    error: E,
    budget: Option<&RetryBudget>,
) -> E {
    if let Some(budget) = budget {
        engine.unmade(budget);
    }
    let logged = Logged::new(&error, engine.policy().log_error);
    events::rejected(name, engine.attempt(), logged);
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
    let limits = limits(engine, &guards);
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
    // Both flags are taken first, whatever follows: they describe this attempt only.
    let not_made = engine.take_not_made();
    let limits = limits(engine, &guards);
    if not_made {
        // No time remained to make the attempt: the call is over. The dependency was not asked,
        // so the breaker hears nothing (a half-open probe slot goes back to other callers), and
        // the budget gets back what it paid for this retry: an attempt never made costs nothing.
        guards.release();
        if let Some(budget) = guards.budget {
            engine.unmade(budget);
        }
        // Reported like a rejection: by the attempts that were made.
        let made = engine.attempt().saturating_sub(1);
        let logged = Logged::new(&error, engine.policy().log_error);
        events::giving_up(name, made, GiveUpReason::DeadlineReached, Some(logged));
        return Decision::Return(Err(error));
    }
    if guards.rejected() {
        return Decision::Return(Err(rejected(engine, name, error, guards.budget)));
    }
    events::attempt_made(name);
    let retryable = retry_err(&error);
    // A timed-out attempt is the dependency's failure, whether or not the call retries it: a
    // dependency that hangs must open the breaker.
    guards.record(!retryable && !limits.timed_out);
    let hint = if retryable { hint(&error) } else { None };
    match engine.after_failure_within(retryable, hint, Instant::now(), limits) {
        Verdict::Retry(delay) => {
            on_retry(&error, &RetryContext::of(engine), delay);
            let logged = Logged::new(&error, engine.policy().log_error);
            events::retrying(name, engine.attempt(), delay, logged);
            Decision::Sleep(delay)
        }
        Verdict::GiveUp(reason) => {
            let logged = Logged::new(&error, engine.policy().log_error);
            events::giving_up(name, engine.attempt(), reason, Some(logged));
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
        // No time remained when the attempt was to start: it ends as timed out, unpolled.
        spent: bool,
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
        if *this.spent {
            this.engine.mark_not_made();
            return Poll::Ready(Err((this.timed_out)(Elapsed::new())));
        }
        let had_budget = coop::has_budget_remaining();
        {
            let _current = Enter::new(this.engine);
            if let Poll::Ready(out) = this.fut.poll(cx) {
                return Poll::Ready(out);
            }
        }
        match this
            .timer
            .as_pin_mut()
            .map(|timer| poll_timer(timer, had_budget, cx))
        {
            Some(Poll::Ready(())) => {
                this.engine.mark_timed_out();
                Poll::Ready(Err((this.timed_out)(Elapsed::new())))
            }
            _ => Poll::Pending,
        }
    }
}

/// Polls an attempt's time limit after the attempt itself, as tokio's own `Timeout` does: when
/// the attempt used up the task's cooperative budget in this poll (an always-ready channel, a
/// busy stream), the timer is polled outside the budget, or it would answer `Pending` forever and
/// an attempt that never yields for any other reason would never be cut. `had_budget` is whether
/// budget remained before the attempt was polled.
#[inline]
pub(crate) fn poll_timer(
    timer: Pin<&mut Sleep>,
    had_budget: bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if had_budget && !coop::has_budget_remaining() {
        std::pin::pin!(coop::unconstrained(timer)).poll(cx)
    } else {
        timer.poll(cx)
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
