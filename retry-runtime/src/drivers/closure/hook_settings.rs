//! The hooks of a closure call, set one by one with the attribute's names (`retry_if`,
//! `retry_after`, `on_retry`, …).

use std::time::Duration;

use super::retry::Retry;
use crate::engine::context::RetryContext;
use crate::engine::hooks::{ClassOf, DelayFor, DelaySlot, FnHooks, TimeoutIf};

// Each hook method changes one slot of the hooks' type: the types are long, not complex.
#[allow(clippy::type_complexity, reason = "one type parameter per hook")]
impl<'p, Op, T, E, RI, RO, RA, OR, TI, B, C>
    Retry<'p, Op, FnHooks<T, E, RI, RO, RA, OR, TI>, B, C>
{
    /// Says whether this call is safe to repeat after an attempt whose outcome is unknown (a
    /// reset after the request was written, a timeout after sending: see
    /// [`Effect`](crate::Effect)), over the policy's
    /// [`idempotent`](crate::RetryPolicyBuilder::idempotent). Not said, a call is not.
    /// The crate's own judgement ([`transient`](crate::transient), no `retry_if`, the policy's
    /// `timeout`) repeats an unknown outcome only on an idempotent call, and a hedged policy
    /// starts hedges only for one; a `retry_if` of your own is obeyed as written.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io::{Error, ErrorKind};
    ///     use reattempt::{RetryPolicy, transient};
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let reset = || async { Err::<(), _>(Error::from(ErrorKind::ConnectionReset)) };
    ///     let calls = std::cell::Cell::new(0);
    ///     let counted = || { calls.set(calls.get() + 1); reset() };
    ///     // Not said: a reset may have come after the write landed, so it is not repeated.
    ///     let _ = policy.retry(counted).retry_if(transient).await;
    ///     assert_eq!(calls.replace(0), 1);
    ///     // Said: the call is safe to repeat.
    ///     let _ = policy.retry(counted).retry_if(transient).idempotent(true).await;
    ///     assert_eq!(calls.get(), 3);
    /// }
    /// ```
    pub fn idempotent(self, idempotent: bool) -> Self {
        self.map_hooks(|hooks| hooks.idempotent(idempotent))
    }

    /// Retries only the errors for which `predicate` is `true` (default: every error). The
    /// predicate's argument type is the operation's error type: no annotation needed.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let out: io::Result<()> = policy
    ///         .retry(|| async { Err(io::Error::from(io::ErrorKind::PermissionDenied)) })
    ///         .retry_if(|e| e.kind() == io::ErrorKind::ConnectionReset)
    ///         .await;
    ///     assert_eq!(out.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    /// }
    /// ```
    pub fn retry_if<P: FnMut(&E) -> bool>(
        self,
        predicate: P,
    ) -> Retry<'p, Op, FnHooks<T, E, P, RO, RA, OR, TI>, B, C> {
        self.map_hooks(|h| h.retry_if(predicate))
    }

    /// Retries the `Ok` values for which `predicate` is `true` (default: none), as the
    /// attribute's `retry_if_ok`: a job still pending, an empty page. When no retry is left, the
    /// last `Ok` is returned.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(5).build().unwrap();
    ///     let mut polls = 0;
    ///     let out: io::Result<&str> = policy
    ///         .retry(|| {
    ///             polls += 1;
    ///             let n = polls;
    ///             async move { Ok(if n < 3 { "pending" } else { "done" }) }
    ///         })
    ///         .retry_if_ok(|status| *status == "pending")
    ///         .await;
    ///     assert_eq!(out.unwrap(), "done");
    ///     assert_eq!(polls, 3);
    /// }
    /// ```
    pub fn retry_if_ok<P: FnMut(&T) -> bool>(
        self,
        predicate: P,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, P, RA, OR, TI>, B, C> {
        self.map_hooks(|h| h.retry_if_ok(predicate))
    }

    /// Honours the delay an error asks for (a Retry-After header, gRPC pushback) as a floor: the
    /// sleep is the larger of the hint and the schedule's (jittered) delay, so a zero or past hint
    /// does not send every client back at once. The call never comes back before the server
    /// allows: a hint beyond `max_delay`, or one whose wait would end past `max_elapsed`, ends the
    /// call with that error ([`GiveUpReason::RetryAfterTooLong`](crate::GiveUpReason)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///
    ///     #[derive(Debug, PartialEq)]
    ///     struct Throttled(Duration);
    ///
    ///     let policy = RetryPolicy::builder().max_delay(Duration::from_secs(5)).build().unwrap();
    ///     let out: Result<(), Throttled> = policy
    ///         .retry(|| async { Err(Throttled(Duration::from_secs(60))) })
    ///         .without_timeout()
    ///         .retry_after(|e| Some(e.0))
    ///         .await;
    ///     // 60 s is beyond max_delay: the call ends at once rather than coming back early.
    ///     assert_eq!(out, Err(Throttled(Duration::from_secs(60))));
    /// }
    /// ```
    pub fn retry_after<F: FnMut(&E) -> Option<Duration>>(
        self,
        hint: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, DelayFor<F, RA::Choose>, OR, TI>, B, C>
    where
        RA: DelaySlot,
    {
        self.map_hooks(|h| h.retry_after(hint))
    }

    /// Chooses the delay before each retry from the error, the attempt that failed (1-based) and
    /// the schedule's delay: `Some` replaces the schedule's delay, `None` keeps it (as
    /// Resilience4j's `IntervalBiFunction`, Polly's `DelayGenerator`, backon's `adjust`; the
    /// attribute's `delay_for`). The choice is bounded by `max_delay`; `retry_after`'s hint is
    /// still a floor under it, and a delay that would end past the deadline ends the call.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let start = Instant::now();
    ///     let out: Result<(), String> = policy
    ///         .retry(|| async { Err("busy".to_owned()) })
    ///         // A fixed 250 ms per attempt made, whatever the schedule says.
    ///         .delay_for(|_, attempt, _| Some(Duration::from_millis(250) * attempt))
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(start.elapsed(), Duration::from_millis(250 + 500));
    /// }
    /// ```
    pub fn delay_for<F: FnMut(&E, u32, Duration) -> Option<Duration>>(
        self,
        choose: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, DelayFor<RA::Hint, F>, OR, TI>, B, C>
    where
        RA: DelaySlot,
    {
        self.map_hooks(|h| h.delay_for(choose))
    }

    /// Calls `f` before each retry's sleep, with the error, the call's context and the sleep
    /// (as the attribute's `on_retry`).
    pub fn on_retry<F: FnMut(&E, &RetryContext, Duration)>(
        self,
        f: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, RA, F, TI>, B, C> {
        self.map_hooks(|h| h.on_retry(f))
    }

    /// Tells which errors report a timeout (an HTTP client's own read timeout), so that a retry
    /// after one costs the budget's `timeout_cost`, as after an attempt the policy's `timeout`
    /// cut, and the circuit breaker counts it as a failure even when it is not retried.
    /// [`is_timeout`](crate::is_timeout) asks [`Transient::is_timeout`](crate::Transient).
    /// The errors it does not name keep the class the retry predicate told (a throttling
    /// error's, after `.retry_if(reattempt::transient)`). Default: the policy's own `timeout`
    /// and the errors whose class the predicate told is a timeout (see
    /// [which drivers honour the class](crate::Transient#which-drivers-honour-it-and-when)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{RetryBudget, RetryPolicy, is_timeout};
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    ///     let out: io::Result<()> = policy
    ///         .retry(|| async { Err(io::ErrorKind::TimedOut.into()) })
    ///         .timeout_if(is_timeout)
    ///         .budget(&budget)
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(budget.available(), 90, "one retry after a timeout: timeout_cost, 10");
    /// }
    /// ```
    pub fn timeout_if<F: FnMut(&E) -> bool>(
        self,
        predicate: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, RA, OR, TimeoutIf<F>>, B, C> {
        self.map_hooks(|h| h.timeout_if(predicate))
    }

    /// Tells the class of the `Ok` values [`retry_if_ok`](Self::retry_if_ok) retries (a 429
    /// status is throttling: its retry grows from the policy's `throttling_delay`), as
    /// [`error_class`](Self::error_class) does for errors.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{ErrorClass, Jitter, RetryPolicy};
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(2)
    ///         .delay(Duration::from_millis(10))
    ///         .throttling_delay(Duration::from_secs(1))
    ///         .jitter(Jitter::None)
    ///         .build()
    ///         .unwrap();
    ///     let start = Instant::now();
    ///     // A status code as the `Ok` value (`http::StatusCode` is classed by `error_class`).
    ///     let out: Result<u16, String> = policy
    ///         .retry(|| async { Ok(429) })
    ///         .retry_if_ok(|s| *s == 429)
    ///         .ok_class(|s| if *s == 429 { ErrorClass::Throttling } else { ErrorClass::Transient })
    ///         .await;
    ///     assert_eq!(out, Ok(429));
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1), "a 429 waits throttling_delay");
    /// }
    /// ```
    pub fn ok_class<F: FnMut(&T) -> crate::ErrorClass>(
        self,
        class: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, crate::OkClassOf<RO, F>, RA, OR, TI>, B, C> {
        self.map_hooks(|h| h.ok_class(class))
    }

    /// Tells each error's class ([`ErrorClass`](crate::ErrorClass)), in place of
    /// [`timeout_if`](Self::timeout_if): a throttling error's retry grows from the policy's
    /// `throttling_delay` and costs the budget's `throttling_cost`; a timeout's costs its
    /// `timeout_cost`. The class given here always wins.
    ///
    /// Not needed when the error's class is known without it: a `retry_if` that asks the crate
    /// ([`.retry_if(reattempt::transient)`](crate::transient), `|e| e.is_transient()` on a type
    /// the crate ships an impl for) tells the call [`Transient::class`](crate::Transient::class)
    /// of each error it judges, as `#[retryable]` asks it of a `Transient` type. Needed when
    /// nothing tells it: a rule of your own on a type of your own, or no `retry_if` (the closure
    /// API puts no bound on the error type, and stable Rust cannot ask `Transient` of a type that
    /// may not implement it); then [`error_class`](crate::error_class) asks
    /// [`Transient::class`](crate::Transient::class). The table of which drivers honour the
    /// class, and when, is under [`Transient::class`](crate::Transient#which-drivers-honour-it-and-when).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{ErrorClass, Jitter, RetryPolicy};
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(2)
    ///         .delay(Duration::from_millis(50))
    ///         .throttling_delay(Duration::from_secs(1))
    ///         .jitter(Jitter::None)
    ///         .build()
    ///         .unwrap();
    ///     let start = Instant::now();
    ///     let out: Result<(), String> = policy
    ///         .retry(|| async { Err("429 Too Many Requests".to_owned()) })
    ///         .error_class(|e| if e.starts_with("429") { ErrorClass::Throttling } else { ErrorClass::Transient })
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1), "a throttling retry waits from 1 s");
    /// }
    /// ```
    pub fn error_class<F: FnMut(&E) -> crate::ErrorClass>(
        self,
        class: F,
    ) -> Retry<'p, Op, FnHooks<T, E, RI, RO, RA, OR, ClassOf<F>>, B, C> {
        self.map_hooks(|h| h.error_class(class))
    }
}
