//! The driver of one retrying call, in the pieces the generated code of `#[retryable]` awaits:
//! [`Call::attempt`] wraps one run of the body, [`Call::decide`] asks the engine what follows,
//! [`Call::sleep`] waits. Each is one of the engine's steps (`engine::steps`); the closure API
//! takes the same steps.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;

use crate::convert::FromElapsed;
use crate::drivers::timed::{self, Limit};
use crate::engine::context::{Slot, enter, enter_recovering};
use crate::engine::events::{self, CallName};
use crate::engine::hooks::Hooks;
use crate::engine::state::{Decision, Engine};
use crate::engine::steps;
use crate::error::BulkheadFull;
use crate::error::Elapsed;
use crate::guards::breaker::CircuitBreaker;
use crate::guards::bulkhead::{Bulkhead, BulkheadPermit};
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admitted, Guards};
use crate::schedule::policy::RetryPolicy;

/// Errors that retries can log: every `E: Debug`.
///
/// ```
/// fn loggable<E: retry_runtime::__private::LoggedError>() {}
/// loggable::<std::io::Error>();
/// ```
// Hidden: only generated code names it, and its blanket impl would otherwise show (with a link
// to a private module) on the docs page of every public type.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a retried error is logged with each retry, so `{Self}` must implement `Debug`",
    label = "`{Self}` is not `Debug`",
    note = "add `#[derive(Debug)]` to `{Self}`"
)]
pub trait LoggedError: Debug {}

impl<E: Debug> LoggedError for E {}

/// Called where a `#[retryable(policy = …)]` function whose attempts cannot overlap (blocking,
/// `&mut self`, `self` or a `&mut` argument) makes a call: if the policy has `hedge_after`,
/// which such a function cannot honour, the first call logs one `WARN` event (`once` is the
/// function's own) naming the function; its attempts run one after another. Otherwise nothing.
///
/// ```
/// use std::sync::Once;
/// use std::time::Duration;
/// use reattempt::{HedgeAfter, RetryPolicy};
/// use retry_runtime::__private::hedge_ignored;
///
/// static WARNED: Once = Once::new();
/// let policy = RetryPolicy::builder().hedge_after(HedgeAfter::Fixed(Duration::from_millis(50))).build().unwrap();
/// hedge_ignored(&policy, &WARNED, "inventory::reserve"); // logs the warning
/// hedge_ignored(&policy, &WARNED, "inventory::reserve"); // not again
/// assert!(WARNED.is_completed());
/// ```
#[inline]
pub fn hedge_ignored(policy: &RetryPolicy, once: &std::sync::Once, name: impl events::CallName) {
    if let Some(hedge_after) = policy.hedge_after() {
        once.call_once(|| events::hedge_ignored(name.name(), hedge_after));
    }
}

/// One logical call: the engine's state. (The call's name for events is passed to
/// [`decide`](Call::decide) as a constant, so that it takes no room in the call's future.)
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use reattempt::{FnHooks, RetryPolicy};
///     use retry_runtime::__private::{Call, Decision, Guards};
///
///     static POLICY: RetryPolicy = match RetryPolicy::builder().max_attempts(3).build() {
///         Ok(p) => p,
///         Err(_) => panic!(),
///     };
///     let mut call = Call::new(&POLICY);
///     let mut failures = 2;
///     let out: Result<&str, &str> = loop {
///         let res = call.attempt(async { if failures > 0 { failures -= 1; Err("busy") } else { Ok("done") } }).await;
///         match call.decide("demo", &mut FnHooks::of(&res), res, Guards::NONE) {
///             Decision::Stop(r) => break r,
///             Decision::Retry(d) => call.sleep(d).await,
///         }
///     };
///     assert_eq!(out, Ok("done"));
/// }
/// ```
#[derive(Debug)]
pub struct Call<'p> {
    engine: Engine<'p>,
}

impl<'p> Call<'p> {
    /// A call following `policy`, made where its first attempt is about to begin: the call's
    /// clock starts now when the policy has `max_elapsed` (which needs the start time), and no
    /// clock is read otherwise (see [`Engine::new`]). (Generated code creates it in the first
    /// poll of the function's future, right before the loop of attempts.)
    #[inline]
    pub fn new(policy: &'p RetryPolicy) -> Self {
        // The attempts then have nothing to check (`begin_untimed_started`).
        Call {
            engine: Engine::new_started(policy),
        }
    }

    /// [`new`](Self::new) for a policy without `max_elapsed`, known where the call is made
    /// (the generated code knows it of the `static` policy it builds from the attribute's keys):
    /// the policy is not read, so nothing is tested when the call begins, whatever the compiler
    /// can see of the policy.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Call;
    ///
    /// static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    /// let mut call = Call::without_deadline(&POLICY);
    /// assert_eq!(call.attempt_blocking(|| reattempt::context().unwrap().attempt()), 1);
    /// ```
    #[inline]
    pub fn without_deadline(policy: &'p RetryPolicy) -> Self {
        debug_assert!(policy.max_elapsed().is_none(), "a policy with max_elapsed");
        Call {
            engine: Engine::new(policy),
        }
    }

    /// Asks the call's guards for leave to make the next attempt (`timed`: whether it will be
    /// timed), before the attempt begins: `full` when the call's bulkhead turned it away, then
    /// `breaker`, then `throttle`; see [`admit`](crate::__private::admit).
    #[inline]
    pub fn admit(
        &self,
        breaker: Option<&CircuitBreaker>,
        throttle: Option<&AdaptiveThrottle>,
        full: bool,
        timed: bool,
    ) -> Admitted {
        steps::admit(&self.engine, breaker, throttle, full, timed)
    }

    /// Takes the call's slot of `bulkhead` before its first attempt: at once if one is free,
    /// otherwise waiting up to the bulkhead's `max_wait`, and never past the call's deadline
    /// (its own `max_elapsed`, or an enclosing call's: see `steps::poll_slot`). The future
    /// borrows the bulkhead only, not the call. Pass what it gives to
    /// [`slot_or_deadline`](Self::slot_or_deadline).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{Bulkhead, RetryPolicy};
    ///     use retry_runtime::__private::Call;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .timeout(Duration::from_millis(100))
    ///         .max_elapsed(Duration::from_millis(300))
    ///         .build()
    ///         .unwrap();
    ///     let bulkhead = Bulkhead::builder().max_concurrent(1).max_wait(Duration::from_secs(10)).build().unwrap();
    ///     let _held = bulkhead.try_acquire().unwrap();
    ///     let call = Call::new(&policy);
    ///     let t0 = tokio::time::Instant::now();
    ///     let waited = call.acquire_slot(&bulkhead).await;
    ///     assert_eq!(t0.elapsed(), Duration::from_millis(300), "the call's max_elapsed, not max_wait");
    ///     // No time is left for the attempt: not turned away, but not made (`DeadlineReached`).
    ///     assert!(matches!(call.slot_or_deadline(&bulkhead, waited, true), Ok(None)));
    /// }
    /// ```
    #[inline]
    pub fn acquire_slot<'b>(
        &self,
        bulkhead: &'b Bulkhead,
    ) -> impl Future<Output = Result<BulkheadPermit<'b>, BulkheadFull>> + use<'b> {
        let until = if bulkhead.max_wait().is_some() {
            steps::slot_deadline(&self.engine)
        } else {
            None
        };
        bulkhead.acquire_until(until)
    }

    /// What the call does with what [`acquire_slot`](Self::acquire_slot) (or a bulkhead's
    /// `try_acquire`) gave: `Ok(Some(slot))`, held to the call's end; `Err` when it is turned
    /// away (`BulkheadFull`); `Ok(None)` when the wait ended at the call's deadline and its
    /// next attempt (`timed`: whether it is timed) cannot be made: the call holds no slot, and
    /// the attempt, begun, is not made, ending the call as `DeadlineReached`.
    ///
    /// # Errors
    /// [`BulkheadFull`] when the call is turned away.
    ///
    /// Only a wait can end at the deadline: a bulkhead without `max_wait` (or a blocking call's
    /// `try_acquire`, with no `timed` attempt) turns the call away at once, deadline or not, as
    /// `steps::poll_slot` does for the other drivers.
    #[inline]
    pub fn slot_or_deadline<P>(
        &self,
        bulkhead: &Bulkhead,
        taken: Result<P, BulkheadFull>,
        timed: bool,
    ) -> Result<Option<P>, BulkheadFull> {
        match taken {
            Ok(slot) => Ok(Some(slot)),
            Err(_)
                if bulkhead.max_wait().is_some() && !steps::slot_wait_full(&self.engine, timed) =>
            {
                Ok(None)
            }
            Err(full) => Err(full),
        }
    }

    /// Names the call's span (feature `spans`) before its first attempt's is made under it
    /// (generated code calls it right after making the call). Without the feature, nothing.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Call;
    ///
    /// static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    /// let mut call = Call::without_deadline(&POLICY);
    /// call.named("charge");
    /// assert_eq!(call.attempt_blocking(|| reattempt::context().unwrap().attempt()), 1);
    /// ```
    #[allow(
        clippy::inline_always,
        reason = "in every generated call: nothing at all without the feature"
    )]
    #[inline(always)]
    pub fn named(&mut self, name: impl CallName) {
        self.engine.spans.open(|| name.name());
    }

    /// Runs one attempt: `context()` names this call while `fut` is polled.
    #[inline]
    pub fn attempt<F: Future>(&mut self, fut: F) -> Attempt<'_, 'p, F> {
        self.engine.begin_untimed_started();
        Attempt {
            engine: &mut self.engine,
            fut,
        }
    }

    /// Runs one attempt under the policy's `timeout` (clipped to the `max_elapsed` deadline, the
    /// call's own or one inherited from an enclosing call): an attempt that runs out of time is
    /// dropped and becomes `Err(E::from(Elapsed))`. When no time remains at all, the body is
    /// never polled: the attempt is `Err(E::from(Elapsed))` at once, and [`decide`](Self::decide)
    /// ends the call with it (`GiveUpReason::DeadlineReached`) without telling the breaker or
    /// counting it.
    #[inline]
    pub fn attempt_timed<F, T, E>(&mut self, fut: F) -> TimedAttempt<'_, 'p, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromElapsed,
    {
        self.attempt_timed_into(fut, E::from_elapsed)
    }

    /// As [`attempt_timed`](Self::attempt_timed), an attempt that runs out of time becoming
    /// `Err(timed_out(Elapsed))`: the attribute's `timeout_into`.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///     use retry_runtime::__private::Call;
    ///
    ///     let policy = RetryPolicy::builder().timeout(Duration::from_millis(10)).build().unwrap();
    ///     let mut call = Call::new(&policy);
    ///     let out: Result<(), u16> = call.attempt_timed_into(std::future::pending(), |_| 504).await;
    ///     assert_eq!(out, Err(504));
    /// }
    /// ```
    #[inline]
    pub fn attempt_timed_into<F, T, E>(
        &mut self,
        fut: F,
        timed_out: fn(Elapsed) -> E,
    ) -> TimedAttempt<'_, 'p, F, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let (limit, pre) = match steps::begin_timed(&mut self.engine) {
            Ok(deadline) => {
                #[cfg(feature = "testing")]
                if let Some(fault) = steps::fault(&self.engine) {
                    let (limit, pre) = injected(&self.engine, fault, deadline);
                    return TimedAttempt {
                        engine: &mut self.engine,
                        fut,
                        limit,
                        pre,
                        timed_out,
                    };
                }
                (Limit::at(deadline), Pre::Run)
            }
            Err(steps::NotMade) => (Limit::Unlimited, Pre::Spent),
        };
        TimedAttempt {
            engine: &mut self.engine,
            fut,
            limit,
            pre,
            timed_out,
        }
    }

    /// Runs one attempt of a blocking function: `context()` names this call while `f` runs.
    /// A policy's fault injection (feature `testing`) adds its latency only (a blocking attempt
    /// has no timeout conversion to fail with): `f` runs after it.
    pub fn attempt_blocking<R>(&mut self, f: impl FnOnce() -> R) -> R {
        self.engine.begin_untimed_started();
        #[cfg(feature = "testing")]
        if let Some(fault) = steps::fault(&self.engine) {
            self.engine.fault_as_latency(fault.latency.is_some());
            if let Some(latency) = fault.latency {
                self.sleep_blocking(latency);
            }
        }
        enter(&self.engine, f)
    }

    /// Runs the `#[recover]` fallback of an async call: `context()` still names this call (its
    /// idempotency key, the attempts made, the time elapsed) while `fut` is polled. Starts no
    /// attempt.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::{RetryPolicy, context};
    ///     use retry_runtime::__private::Call;
    ///
    ///     static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    ///     let mut call = Call::new(&POLICY);
    ///     let seen = call.attempt(async { context().unwrap().idempotency_key() }).await;
    ///     let fallback = call.recover(async { context().unwrap().idempotency_key() }).await;
    ///     assert_eq!(seen, fallback);
    /// }
    /// ```
    #[inline]
    // No `F: Future` bound here: a fallback that is not a future is one error, at its `.await`.
    pub fn recover<F>(&mut self, fut: F) -> Recover<'_, 'p, F> {
        Recover {
            engine: &mut self.engine,
            fut,
        }
    }

    /// Runs the `#[recover]` fallback of a call made through the closure driver (a hedged
    /// `#[retryable]` function) once `call` has returned, in that call's context, as
    /// [`recover`](Self::recover) does for the loop: `context()` gives the key its attempts sent.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::future::IntoFuture;
    ///     use std::pin::pin;
    ///     use reattempt::{RetryPolicy, context};
    ///     use retry_runtime::__private::Call;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let mut keys = vec![];
    ///     let mut call = pin!(policy
    ///         .retry(|| {
    ///             keys.push(context().unwrap().idempotency_key());
    ///             async { Err::<(), std::io::Error>(std::io::ErrorKind::ConnectionReset.into()) }
    ///         })
    ///         .into_future());
    ///     assert!(call.as_mut().await.is_err());
    ///     let fallback = Call::recover_after(call.as_mut(), async { context().unwrap().idempotency_key() }).await;
    ///     drop(call);
    ///     assert_eq!(keys, [fallback, fallback]);
    /// }
    /// ```
    pub fn recover_after<'a, Op, Fut: Future, K, B: crate::drivers::kept::KeepsOutcome, C, F>(
        call: Pin<&'a mut crate::drivers::closure::RetryFuture<'p, Op, Fut, K, B, C>>,
        fut: F,
    ) -> Recover<'a, 'p, F> {
        Recover {
            engine: call.engine(),
            fut,
        }
    }

    /// Runs the `#[recover]` fallback of a blocking call: `context()` still names this call
    /// while `f` runs. Starts no attempt.
    ///
    /// ```
    /// use reattempt::{RetryPolicy, context};
    /// use retry_runtime::__private::Call;
    ///
    /// static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    /// let mut call = Call::new(&POLICY);
    /// let seen = call.attempt_blocking(|| context().unwrap().idempotency_key());
    /// assert_eq!(call.recover_blocking(|| context().unwrap().idempotency_key()), seen);
    /// ```
    pub fn recover_blocking<R>(&mut self, f: impl FnOnce() -> R) -> R {
        enter_recovering(&self.engine, f)
    }

    /// Decides what follows an attempt's outcome (`name` labels the call's events), per the
    /// engine's rules ([`decide`](crate::__private::decide)). `hooks` comes before the outcome,
    /// so that generated code can name the outcome's types with [`FnHooks::of`] before moving it.
    ///
    /// [`FnHooks::of`]: crate::FnHooks::of
    #[inline]
    pub fn decide<T, E: LoggedError>(
        &mut self,
        name: impl CallName,
        hooks: &mut impl Hooks<T, E>,
        outcome: Result<T, E>,
        guards: Guards<'_>,
    ) -> Decision<Result<T, E>> {
        let decision = steps::decide(&mut self.engine, name, hooks, outcome, guards);
        self.retrying(&decision);
        decision
    }

    /// As [`decide`](Self::decide), for a call with a breaker or a throttle: a retry either
    /// turns away ends the call with the outcome kept in `last` (see
    /// [`decide_keeping`](crate::__private::decide_keeping)).
    #[inline]
    pub fn decide_keeping<T, E: LoggedError>(
        &mut self,
        name: impl CallName,
        hooks: &mut impl Hooks<T, E>,
        outcome: Result<T, E>,
        guards: Guards<'_>,
        last: &mut Option<Result<T, E>>,
    ) -> Decision<Result<T, E>> {
        let decision = steps::decide_keeping(&mut self.engine, name, hooks, outcome, guards, last);
        self.retrying(&decision);
        decision
    }

    /// After a `Retry`, forgets the flags of the attempt that ended (its class, whether it was
    /// made), which a timed attempt's begin forgets too: an untimed one
    /// (`begin_untimed_started`) then begins with one addition, on the success path of every
    /// call, where this costs nothing (a success is a `Stop`).
    #[inline]
    fn retrying<O>(&self, decision: &Decision<O>) {
        if let Decision::Retry(_) = decision {
            self.engine.forget_class();
            self.engine.forget_not_made();
        }
    }

    /// What a call does with an attempt a guard turned away before it began (its
    /// [`Admitted::rejection`] is `Some`; `error` is the rejection converted): it ends, with the
    /// rejection or the last outcome kept in `last` (see
    /// [`decide_rejected`](crate::__private::decide_rejected)). A driver that calls it where the
    /// rejection is found, rather than passing the rejection to
    /// [`decide_keeping`](Self::decide_keeping), keeps the hooks and the sleep off the path of a
    /// call that succeeds.
    ///
    /// # Errors
    /// The call's error: the rejection, or the last attempt's error kept in `last`.
    ///
    /// ```
    /// use reattempt::{CircuitBreaker, RetryPolicy};
    /// use retry_runtime::__private::{Call, Guards};
    ///
    /// static POLICY: RetryPolicy = match RetryPolicy::builder().build() { Ok(p) => p, Err(_) => panic!() };
    /// let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
    /// breaker.record(breaker.try_acquire().unwrap(), false);
    /// let mut call = Call::new(&POLICY);
    /// let admitted = call.admit(Some(&breaker), None, false, false);
    /// assert!(admitted.rejection().is_some());
    /// let guards = Guards::NONE.admitted(Some(&breaker), None, admitted);
    /// let out: Result<(), &str> = call.decide_rejected("demo", "open", guards, &mut None);
    /// assert_eq!(out, Err("open"));
    /// ```
    #[inline]
    pub fn decide_rejected<T, E: LoggedError>(
        &mut self,
        name: impl CallName,
        error: E,
        guards: Guards<'_>,
        last: &mut Option<Result<T, E>>,
    ) -> Result<T, E> {
        steps::decide_rejected(&mut self.engine, name, error, guards, last)
    }

    /// How long a call that gave up waits before it returns: `Some` only when its policy is
    /// long-polling and the budget alone refused its retry (see
    /// [`Engine::linger`](crate::__private::Engine::linger)); sleep it as a retry's delay is
    /// slept, then return. Read once.
    ///
    /// ```
    /// use reattempt::{FnHooks, Jitter, RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::{Call, Decision, Guards};
    ///
    /// let policy = RetryPolicy::builder().jitter(Jitter::None).long_polling(true).build().unwrap();
    /// let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    /// let mut call = Call::new(&policy);
    /// let res: Result<(), &str> = call.attempt_blocking(|| Err("busy"));
    /// let decision = call.decide("demo", &mut FnHooks::of(&res), res, Guards::NONE.budget(&empty));
    /// assert_eq!(decision, Decision::Stop(Err("busy")));
    /// // What is left of the retry's 100 ms backoff, measured from the decision.
    /// assert!(call.linger().is_some_and(|d| d <= std::time::Duration::from_millis(100)));
    /// assert_eq!(call.linger(), None, "read once");
    /// ```
    #[inline]
    pub fn linger(&self) -> Option<Duration> {
        self.engine
            .linger()
            .map(|until| until.saturating_duration_since(tokio::time::Instant::now()))
    }

    /// The sleep before the next attempt, boxed: tokio's `Sleep` is 112 bytes, and kept in the
    /// function's future it would make every call's future that much larger, the calls that
    /// succeed at once (most of them) included. Boxed, it costs one allocation per retry, a
    /// retry that then waits at least its delay; a call that succeeds at once allocates nothing.
    #[inline]
    pub fn sleep(&self, delay: Duration) -> Pin<Box<Sleep>> {
        Box::pin(tokio::time::sleep(delay))
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
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Call;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let mut call = Call::new(&policy);
    /// call.attempt_blocking(|| ());
    /// call.sleep_blocking(Duration::from_millis(1)); // no runtime here: a plain sleep
    /// ```
    pub fn sleep_blocking(&self, delay: Duration) {
        use tokio::runtime::{Handle, RuntimeFlavor};
        // A test clock on this thread (`reattempt::testing::with_test_clock`): no real time.
        #[cfg(feature = "testing")]
        if crate::testing::clock::running() {
            crate::testing::clock::sleep_blocking(delay);
            return;
        }
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
        // `poll_in_context`, written out: one function fewer for each `#[retryable]` function's
        // body type, to compile (and, in a release build, to inline) in the user's crate.
        let this = self.project();
        let slot = Slot::of(this.engine);
        let _entered = slot.enter();
        this.fut.poll(cx)
    }
}

/// What comes before a timed attempt's body is polled.
#[derive(Debug, Clone, Copy)]
enum Pre {
    /// Nothing: the body is polled.
    Run,
    /// No time remained when the attempt was to start: it ends as timed out, unpolled.
    Spent,
    /// A fault injected (feature `testing`): the limit's timer is its wait (or none, for an
    /// error at once), then this.
    #[cfg(feature = "testing")]
    Injected(steps::AfterWait),
}

/// The limit and what comes first of a timed attempt into which `fault` is injected.
#[cfg(feature = "testing")]
#[cold]
fn injected(
    engine: &Engine<'_>,
    fault: steps::Fault,
    deadline: Option<tokio::time::Instant>,
) -> (Limit, Pre) {
    match steps::plan_fault(engine, fault, deadline, true) {
        steps::FaultPlan::Run => (Limit::at(deadline), Pre::Run),
        steps::FaultPlan::Fail(_) => (Limit::Unlimited, Pre::Injected(steps::AfterWait::Fail)),
        steps::FaultPlan::Wait { until, then } => (Limit::at(Some(until)), Pre::Injected(then)),
    }
}

/// Waits out an injected fault's latency (the limit's timer): `Ready(Some(e))` the attempt
/// fails with `e`; `Ready(None)` its body is polled now, under its own limit.
#[cfg(feature = "testing")]
#[cold]
#[inline(never)]
fn poll_fault(
    engine: &Engine<'_>,
    mut limit: Pin<&mut Limit>,
    pre: &mut Pre,
    cx: &mut Context<'_>,
) -> Poll<Option<Elapsed>> {
    let Pre::Injected(then) = *pre else {
        return Poll::Ready(None);
    };
    if let Some(sleep) = timed::arm(limit.as_mut()) {
        std::task::ready!(sleep.poll(cx));
    }
    *pre = Pre::Run;
    if let steps::AfterWait::Run(deadline) = then {
        limit.set(Limit::at(deadline));
    }
    Poll::Ready(steps::after_fault_wait(engine, then))
}

pin_project! {
    /// One attempt of an async body under a time limit; made by [`Call::attempt_timed`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct TimedAttempt<'a, 'p, F, E> {
        engine: &'a mut Engine<'p>,
        #[pin]
        fut: F,
        // Armed only if the attempt answers `Pending`.
        #[pin]
        limit: Limit,
        // What comes before the body is polled: nothing, an attempt not made, or an injected fault.
        pre: Pre,
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

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        #[cfg_attr(not(feature = "testing"), allow(unused_mut))]
        let mut this = self.project();
        match *this.pre {
            Pre::Run => {}
            Pre::Spent => return Poll::Ready(Err((this.timed_out)(Elapsed::new()))),
            #[cfg(feature = "testing")]
            Pre::Injected(_) => {
                if let Some(failed) =
                    std::task::ready!(poll_fault(this.engine, this.limit.as_mut(), this.pre, cx))
                {
                    return Poll::Ready(Err((this.timed_out)(failed)));
                }
            }
        }
        // `poll_attempt`, written out with its limit's steps out of line ([`timed::limit`]): what
        // is compiled for each `#[retryable]` function's body type is the poll itself.
        let timed = !matches!(*this.limit, Limit::Unlimited);
        let had_budget = timed && timed::budget_left();
        {
            let slot = Slot::of(this.engine);
            let _entered = slot.enter();
            if let Poll::Ready(out) = this.fut.poll(cx) {
                return Poll::Ready(out);
            }
        }
        if timed && timed::limit(this.engine, this.limit, had_budget, cx).is_ready() {
            return Poll::Ready(Err((this.timed_out)(Elapsed::new())));
        }
        Poll::Pending
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
        let slot = Slot::recovering(this.engine);
        let _entered = slot.enter();
        this.fut.poll(cx)
    }
}
