//! The other settings of a closure call: all its hooks at once, its guards (circuit breaker,
//! throttle, bulkhead) and how their rejections and a timeout become its error, its budget and
//! its name.

use std::future::Future;

use super::guard_slot::{AddGuard, Breaker, Conversion, Given};
use super::retry::Retry;
// For the docs' links only.
use crate::drivers::timeout::NoTimeout;
use crate::error::{BreakerOpen, Elapsed};
use crate::error::{BulkheadFull, Throttled};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::Bulkhead;
use crate::guards::throttle::AdaptiveThrottle;

// Each guard and conversion setting changes one slot of the guards' type.
#[allow(
    clippy::type_complexity,
    reason = "one type parameter per conversion source"
)]
impl<'p, Op, K, B, C> Retry<'p, Op, K, B, C> {
    /// All the hooks at once, as one [`Hooks`] value (in place of `retry_if`, `retry_if_ok`,
    /// `retry_after`, `on_retry` and `timeout_if`): a classification shared by many calls.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{Hooks, RetryPolicy};
    ///
    ///     struct ResetsOnly;
    ///     impl<T> Hooks<T, io::Error> for ResetsOnly {
    ///         fn retry_if(&mut self, e: &io::Error) -> bool {
    ///             e.kind() == io::ErrorKind::ConnectionReset
    ///         }
    ///     }
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let mut calls = 0;
    ///     let out: io::Result<()> = policy
    ///         .retry(|| { calls += 1; async { Err(io::ErrorKind::PermissionDenied.into()) } })
    ///         .hooks(ResetsOnly)
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(calls, 1);
    /// }
    /// ```
    ///
    /// [`Hooks`]: crate::engine::hooks::Hooks
    pub fn hooks<H>(self, hooks: H) -> Retry<'p, Op, H, B, C> {
        self.map_hooks(|_| hooks)
    }

    /// Makes the error of an attempt the policy's `timeout` cut with `f`, for an error type
    /// without `From<Elapsed>` (or to choose another variant than its `From` impl does).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(2)
    ///         .timeout(Duration::from_millis(10))
    ///         .build()
    ///         .unwrap();
    ///     let out: Result<u32, String> = policy
    ///         .retry(|| std::future::pending())
    ///         .timeout_into(|elapsed| format!("gave up: {elapsed}"))
    ///         .await;
    ///     assert!(out.unwrap_err().starts_with("gave up"));
    /// }
    /// ```
    pub fn timeout_into<F, Fut, T, E>(self, f: F) -> Retry<'p, Op, K, B, F>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        F: FnMut(Elapsed) -> E,
    {
        self.map_timeout(f)
    }

    /// Runs the attempts without a per-attempt time limit, even if the policy sets `timeout`:
    /// for an error type that cannot hold a timeout (`reqwest::Error` has its own timeouts).
    /// `max_elapsed` still bounds the sleeps; with no timeout, an attempt is never cut.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let out: Result<u32, String> = policy
    ///         .retry(|| async { Err("refused".to_string()) })
    ///         .without_timeout()
    ///         .retry_if(|e| e != "refused")
    ///         .await;
    ///     assert_eq!(out.unwrap_err(), "refused");
    /// }
    /// ```
    ///
    /// Without it (or `.timeout_into`), such an error type does not compile, whatever the policy:
    ///
    /// ```compile_fail
    /// # async fn f() {
    /// let policy = reattempt::RetryPolicy::builder().build().unwrap();
    /// let out: Result<u32, std::num::ParseIntError> = policy.retry(|| async { "x".parse() }).await;
    /// # }
    /// ```
    pub fn without_timeout(self) -> Retry<'p, Op, K, B, NoTimeout> {
        self.map_timeout(NoTimeout)
    }

    /// Passes every attempt through `breaker`: while it is open, the call ends at once with
    /// `E::from_breaker_open(BreakerOpen)` ([`FromBreakerOpen`]: a `From<BreakerOpen>` impl,
    /// `String`, or another crate's error with its feature), or with what
    /// [`breaker_open_into`](Self::breaker_open_into), called before, makes. A rejection is never
    /// retried; one that turns away a *retry* ends the call with the last attempt's outcome, as
    /// a budget that cannot pay does.
    ///
    /// [`FromBreakerOpen`]: crate::convert::FromBreakerOpen
    pub fn circuit_breaker<E>(
        self,
        breaker: &'p CircuitBreaker,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
        B::Open: Conversion<BreakerOpen, E>,
    {
        let mut guards = self.breaker.guards();
        guards.breaker = Some((breaker, B::Open::pick(guards.given.0)));
        self.map_guards(guards)
    }

    /// Makes the error of a call the breaker rejects with `f`: for an error type without a
    /// [`FromBreakerOpen`] conversion (another crate's), or to choose another value than it
    /// gives. Call it before [`circuit_breaker`](Self::circuit_breaker) when the error type has
    /// no conversion of its own (or after, to replace one). The attribute's key of the same name.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::{CircuitBreaker, RetryPolicy};
    ///
    ///     #[derive(Debug, PartialEq)]
    ///     struct Foreign(&'static str); // no `From<BreakerOpen>`, as another crate's type
    ///
    ///     let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
    ///     let permit = breaker.try_acquire().unwrap();
    ///     breaker.record(permit, false); // open
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let out: Result<(), Foreign> = policy
    ///         .retry(|| async { Ok(()) })
    ///         .without_timeout()
    ///         .breaker_open_into(|_open| Foreign("unavailable"))
    ///         .circuit_breaker(&breaker)
    ///         .await;
    ///     assert_eq!(out, Err(Foreign("unavailable")));
    /// }
    /// ```
    ///
    /// [`FromBreakerOpen`]: crate::convert::FromBreakerOpen
    pub fn breaker_open_into<E>(
        self,
        f: fn(BreakerOpen) -> E,
    ) -> Retry<'p, Op, K, Breaker<'p, E, Given, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
    {
        let mut guards = self.breaker.guards();
        guards.given.0 = Some(f);
        if let Some((_, open)) = &mut guards.breaker {
            *open = f;
        }
        self.map_guards(guards.with_sources())
    }

    /// Passes every attempt (retries included) through the client-side adaptive `throttle`
    /// (after the breaker, if any): an attempt it sheds is not made, and the call ends at once
    /// with `E::from_throttled(Throttled)` ([`FromThrottled`]), or what
    /// [`throttled_into`](Self::throttled_into), called before, makes; never retried (a shed
    /// *retry* ends the call with the last attempt's outcome). The throttle hears whether the
    /// dependency accepted each attempt it let through (see [`AdaptiveThrottle`]).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{AdaptiveThrottle, RetryPolicy};
    ///
    ///     let throttle = AdaptiveThrottle::builder().build().unwrap();
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let out: io::Result<u32> = policy.retry(|| async { Ok(7) }).throttle(&throttle).await;
    ///     assert_eq!(out.unwrap(), 7);
    ///     assert_eq!(throttle.counts(), (1, 1), "one request, accepted");
    /// }
    /// ```
    ///
    /// [`FromThrottled`]: crate::convert::FromThrottled
    pub fn throttle<E>(
        self,
        throttle: &'p AdaptiveThrottle,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
        B::Shed: Conversion<Throttled, E>,
    {
        let mut guards = self.breaker.guards();
        guards.throttle = Some((throttle, B::Shed::pick(guards.given.1)));
        self.map_guards(guards)
    }

    /// Makes the error of an attempt the throttle sheds with `f` (see
    /// [`breaker_open_into`](Self::breaker_open_into): the same rules, for
    /// [`throttle`](Self::throttle)).
    ///
    /// ```
    /// use reattempt::{AdaptiveThrottle, RetryPolicy};
    ///
    /// struct Foreign;
    /// let throttle = AdaptiveThrottle::builder().build().unwrap();
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let _call = policy
    ///     .retry(|| async { Ok::<(), Foreign>(()) })
    ///     .without_timeout()
    ///     .throttled_into(|_shed| Foreign)
    ///     .throttle(&throttle);
    /// ```
    pub fn throttled_into<E>(
        self,
        f: fn(Throttled) -> E,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, Given, B::Full>, C>
    where
        B: AddGuard<'p, E>,
    {
        let mut guards = self.breaker.guards();
        guards.given.1 = Some(f);
        if let Some((_, shed)) = &mut guards.throttle {
            *shed = f;
        }
        self.map_guards(guards.with_sources())
    }

    /// Holds a slot of `bulkhead` for the whole call, from before its first attempt to its end,
    /// its sleeps included (freed when the future is done, so before a fallback run after it). When every slot is taken (for the bulkhead's `max_wait`, if it has
    /// one) no attempt is made and the call ends at once with
    /// `E::from_bulkhead_full(BulkheadFull)` ([`FromBulkheadFull`]), or what
    /// [`bulkhead_full_into`](Self::bulkhead_full_into), called before, makes; never retried.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{Bulkhead, RetryPolicy};
    ///
    ///     let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let _held = bulkhead.try_acquire().unwrap(); // another call holds the only slot
    ///     let out: io::Result<u32> = policy.retry(|| async { Ok(7) }).bulkhead(&bulkhead).await;
    ///     assert_eq!(out.unwrap_err().to_string(), "bulkhead full");
    /// }
    /// ```
    ///
    /// [`FromBulkheadFull`]: crate::convert::FromBulkheadFull
    pub fn bulkhead<E>(
        self,
        bulkhead: &'p Bulkhead,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
        B::Full: Conversion<BulkheadFull, E>,
    {
        let mut guards = self.breaker.guards();
        guards.full = Some(B::Full::pick(guards.given.2));
        let mut retry = self.map_guards(guards);
        retry.bulkhead = Some(bulkhead);
        retry
    }

    /// Makes the error of a call the full bulkhead turns away with `f` (see
    /// [`breaker_open_into`](Self::breaker_open_into): the same rules, for
    /// [`bulkhead`](Self::bulkhead)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::{Bulkhead, RetryPolicy};
    ///
    ///     #[derive(Debug, PartialEq)]
    ///     struct Foreign(u16);
    ///     let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    ///     let _held = bulkhead.try_acquire().unwrap();
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let out: Result<(), Foreign> = policy
    ///         .retry(|| async { Ok(()) })
    ///         .without_timeout()
    ///         .bulkhead_full_into(|_full| Foreign(503))
    ///         .bulkhead(&bulkhead)
    ///         .await;
    ///     assert_eq!(out, Err(Foreign(503)));
    /// }
    /// ```
    pub fn bulkhead_full_into<E>(
        self,
        f: fn(BulkheadFull) -> E,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, Given>, C>
    where
        B: AddGuard<'p, E>,
    {
        let mut guards = self.breaker.guards();
        guards.given.2 = Some(f);
        if let Some(full) = &mut guards.full {
            *full = f;
        }
        self.map_guards(guards.with_sources())
    }

    /// Every guard at once, each if given, with the conversion of each rejection into `E` (for
    /// a driver whose guards are known only at run time, and whose error type cannot implement
    /// `From` for them, as the reqwest middleware's `reqwest_middleware::Error`).
    #[cfg(feature = "reqwest-middleware")]
    #[allow(clippy::type_complexity, reason = "one conversion per guard")]
    pub(crate) fn guards<E>(
        self,
        breaker: Option<&'p CircuitBreaker>,
        throttle: Option<&'p AdaptiveThrottle>,
        bulkhead: Option<&'p Bulkhead>,
        (open, shed, full): (
            fn(BreakerOpen) -> E,
            fn(Throttled) -> E,
            fn(BulkheadFull) -> E,
        ),
    ) -> Retry<'p, Op, K, Breaker<'p, E>, C> {
        let guards = Breaker {
            breaker: breaker.map(|b| (b, open)),
            throttle: throttle.map(|t| (t, shed)),
            full: bulkhead.map(|_| full),
            given: (Some(open), Some(shed), Some(full)),
            sources: std::marker::PhantomData,
        };
        let mut retry = self.map_guards(guards);
        retry.bulkhead = bulkhead;
        retry
    }

    /// Pays each retry from `budget` (and each success back into it): when it cannot pay, the
    /// call ends with its last error. The call's type does not change, and nothing of `T` or
    /// `E` is held across a sleep for it: the future stays `Send` whatever they are.
    ///
    /// Under a long-polling policy ([`long_polling`](crate::RetryPolicyBuilder::long_polling))
    /// the call would wait the refused retry's backoff before it returns, holding the outcome
    /// meanwhile: a call with a circuit breaker, a throttle or a bulkhead keeps it and
    /// waits; a call with only a budget waits once it is asked to with
    /// [`long_polling_wait`](Self::long_polling_wait), and otherwise returns at once (one WARN
    /// event says so).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::{RetryBudget, RetryPolicy};
    ///
    ///     // The same type with or without a budget: a budget given only when configured.
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let configured: Option<RetryBudget> = Some(RetryBudget::builder().build().unwrap());
    ///     let call = policy.retry(|| async { Ok::<u8, std::io::Error>(1) });
    ///     let call = if let Some(b) = &configured { call.budget(b) } else { call };
    ///     assert_eq!(call.await.unwrap(), 1);
    /// }
    /// ```
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Lets a long-polling policy's call wait when only its budget refused a retry (see
    /// [`long_polling`](crate::RetryPolicyBuilder::long_polling)): the call keeps its last
    /// outcome across the wait, then returns it. Its future is then `Send` only if `T` and `E`
    /// are (as with a breaker, which keeps the outcome already and needs no opt-in). The
    /// outcome is kept only for that wait (and, with a breaker or a throttle, between
    /// attempts), never across an ordinary backoff sleep because of a budget.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{Jitter, RetryBudget, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .delay(Duration::from_millis(100))
    ///         .jitter(Jitter::None)
    ///         .long_polling(true)
    ///         .build()
    ///         .unwrap();
    ///     let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    ///     let t0 = tokio::time::Instant::now();
    ///     let out: Result<(), &str> = policy
    ///         .retry(|| async { Err("busy") })
    ///         .without_timeout()
    ///         .retry_if(|_| true)
    ///         .budget(&empty)
    ///         .long_polling_wait()
    ///         .await;
    ///     assert_eq!(out, Err("busy"));
    ///     // The budget refused the first retry: the call waited its 100 ms backoff.
    ///     assert_eq!(t0.elapsed(), Duration::from_millis(100));
    /// }
    /// ```
    pub fn long_polling_wait<E>(
        self,
    ) -> Retry<'p, Op, K, Breaker<'p, E, B::Open, B::Shed, B::Full>, C>
    where
        B: AddGuard<'p, E>,
    {
        let guards = self.breaker.guards();
        self.map_guards(guards)
    }

    /// Labels the call in events (default `"retry"`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}
