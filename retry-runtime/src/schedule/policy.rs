//! The retry schedule: how many attempts, how long between them, and the time limits.

use std::time::Duration;

use retry_rules::{Backoff, HedgeAfter, HintMode, Jitter, LogError, PolicyError, PolicySettings};

use crate::schedule::hedge::Latencies;

/// A validated retry schedule. Build one with [`RetryPolicy::builder`].
///
/// The builder's methods carry the attribute's key names, so one vocabulary serves
/// `#[retryable(...)]` and code that builds a policy at run time (from config, say).
///
/// ```
/// use std::time::Duration;
/// use reattempt::{Backoff, Jitter, RetryPolicy};
///
/// # fn main() -> Result<(), reattempt::PolicyError> {
/// let policy = RetryPolicy::builder()
///     .max_attempts(4)
///     .delay(Duration::from_millis(200))
///     .backoff(Backoff::Exponential)
///     .multiplier(2.0)
///     .max_delay(Duration::from_secs(2))
///     .jitter(Jitter::None)
///     .build()?;
/// let sleeps: Vec<Duration> = policy.delays().collect();
/// assert_eq!(sleeps, [200, 400, 800].map(Duration::from_millis));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) delay: Duration,
    /// The first delay after a throttling error (`delay` unless set).
    pub(crate) throttling_delay: Duration,
    pub(crate) backoff: Backoff,
    pub(crate) multiplier: f64,
    pub(crate) max_delay: Duration,
    pub(crate) jitter: Jitter,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_elapsed: Option<Duration>,
    pub(crate) log_error: LogError,
    pub(crate) hedge_after: Option<HedgeAfter>,
    /// The recent attempt latencies, for a quantile `hedge_after`.
    pub(crate) latencies: Latencies,
    pub(crate) one_layer: bool,
    pub(crate) idempotent: Option<bool>,
    pub(crate) hint_mode: HintMode,
    pub(crate) long_polling: bool,
    /// Fault injection (feature `testing`): `None` unless set.
    #[cfg(feature = "testing")]
    pub(crate) faults: Option<crate::testing::faults::Faults>,
}

/// Defaults, as in the attribute's table (the rules' own: [`PolicySettings`] has each under the
/// same name).
impl RetryPolicy {
    /// Total attempts, the first included.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = PolicySettings::DEFAULT_MAX_ATTEMPTS;
    /// The most attempts a policy may allow (2²⁶ − 1, over 67 million): a call's attempt counter
    /// shares its word with the attempt's flags and the budget's bookkeeping, so that the call's
    /// future stays small.
    ///
    /// `u32::MAX`, the usual way to say "retry until something else stops it", is accepted and
    /// stands for this most: with the default 20 s ceiling on a delay that is over 40 years of
    /// retrying, so a call ends by its `max_elapsed`, an error it does not retry, or an enclosing
    /// deadline. Other counts above it are an error.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    ///
    /// let forever = RetryPolicy::builder().max_attempts(u32::MAX).build().unwrap();
    /// assert_eq!(forever.max_attempts(), RetryPolicy::MAX_ATTEMPTS);
    /// let err = RetryPolicy::builder().max_attempts(u32::MAX - 1).build().unwrap_err();
    /// assert_eq!(err.field(), "max_attempts");
    /// assert!(RetryPolicy::builder().max_attempts(RetryPolicy::MAX_ATTEMPTS).build().is_ok());
    /// ```
    pub const MAX_ATTEMPTS: u32 = PolicySettings::MAX_ATTEMPTS;
    /// The first backoff delay.
    pub const DEFAULT_DELAY: Duration = PolicySettings::DEFAULT_DELAY;
    /// The exponential growth factor.
    pub const DEFAULT_MULTIPLIER: f64 = PolicySettings::DEFAULT_MULTIPLIER;
    /// The ceiling of one delay, before jitter.
    pub const DEFAULT_MAX_DELAY: Duration = PolicySettings::DEFAULT_MAX_DELAY;

    /// A builder holding the defaults: 3 attempts, 100 ms exponential ×2 up to 20 s, full jitter,
    /// no timeout, no total limit.
    ///
    /// ```
    /// let policy = reattempt::RetryPolicy::builder().build().unwrap();
    /// assert_eq!(policy.max_attempts(), 3);
    /// ```
    pub const fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            settings: PolicySettings::new(),
            #[cfg(feature = "testing")]
            faults: None,
        }
    }

    /// Total attempts, the first included.
    ///
    /// ```
    /// let p = reattempt::RetryPolicy::builder().max_attempts(5).build().unwrap();
    /// assert_eq!(p.max_attempts(), 5);
    /// ```
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The first backoff delay.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = reattempt::RetryPolicy::builder().build().unwrap();
    /// assert_eq!(p.delay(), Duration::from_millis(100));
    /// ```
    pub const fn delay(&self) -> Duration {
        self.delay
    }

    /// The first backoff delay after a throttling error ([`ErrorClass::Throttling`]): `delay`
    /// unless set.
    ///
    /// [`ErrorClass::Throttling`]: crate::ErrorClass::Throttling
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = reattempt::RetryPolicy::builder().build().unwrap();
    /// assert_eq!(p.throttling_delay(), p.delay());
    /// let p = reattempt::RetryPolicy::builder().throttling_delay(Duration::from_secs(1)).build().unwrap();
    /// assert_eq!(p.throttling_delay(), Duration::from_secs(1));
    /// ```
    pub const fn throttling_delay(&self) -> Duration {
        self.throttling_delay
    }

    /// The first delay of a retry after an error of `class`: `throttling_delay` after throttling,
    /// else `delay`.
    #[inline]
    pub(crate) const fn base_delay(&self, class: crate::ErrorClass) -> Duration {
        match class {
            crate::ErrorClass::Throttling => self.throttling_delay,
            _ => self.delay,
        }
    }

    /// How the delay grows.
    ///
    /// ```
    /// use reattempt::{Backoff, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().build().unwrap().backoff(), Backoff::Exponential);
    /// ```
    pub const fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// The exponential growth factor.
    ///
    /// ```
    /// assert_eq!(reattempt::RetryPolicy::builder().build().unwrap().multiplier(), 2.0);
    /// ```
    pub const fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// The ceiling of one delay, before jitter.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::RetryPolicy;
    /// // The default ceiling rises to a `delay` above 20 s.
    /// let p = RetryPolicy::builder().delay(Duration::from_secs(30)).build().unwrap();
    /// assert_eq!(p.max_delay(), Duration::from_secs(30));
    /// ```
    pub const fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// How delays are randomised.
    ///
    /// ```
    /// use reattempt::{Jitter, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().build().unwrap().jitter(), Jitter::Full);
    /// ```
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The per-attempt time limit, if any.
    ///
    /// ```
    /// assert_eq!(reattempt::RetryPolicy::builder().build().unwrap().timeout(), None);
    /// ```
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The limit on all attempts and sleeps of one call, if any.
    ///
    /// ```
    /// assert_eq!(reattempt::RetryPolicy::builder().build().unwrap().max_elapsed(), None);
    /// ```
    pub const fn max_elapsed(&self) -> Option<Duration> {
        self.max_elapsed
    }

    /// Whether the call retries at one layer only (see [`RetryPolicyBuilder::one_layer`]).
    ///
    /// ```
    /// let p = reattempt::RetryPolicy::builder().one_layer(true).build().unwrap();
    /// assert!(p.one_layer());
    /// assert!(!reattempt::RetryPolicy::default().one_layer());
    /// ```
    pub const fn one_layer(&self) -> bool {
        self.one_layer
    }

    /// Whether calls under this policy may be repeated after an attempt whose outcome is unknown
    /// (see [`RetryPolicyBuilder::idempotent`]); `None` when the policy does not say.
    ///
    /// ```
    /// let p = reattempt::RetryPolicy::builder().idempotent(true).build().unwrap();
    /// assert_eq!(p.idempotent(), Some(true));
    /// assert_eq!(reattempt::RetryPolicy::default().idempotent(), None);
    /// ```
    pub const fn idempotent(&self) -> Option<bool> {
        self.idempotent
    }

    /// How a server's hint makes the wait (see [`RetryPolicyBuilder::hint_mode`]).
    ///
    /// ```
    /// use reattempt::{HintMode, Preset, RetryPolicy};
    /// assert_eq!(RetryPolicy::default().hint_mode(), HintMode::Floor);
    /// assert_eq!(Preset::Aws2026.policy().build().unwrap().hint_mode(), HintMode::AWS_2026);
    /// ```
    pub const fn hint_mode(&self) -> HintMode {
        self.hint_mode
    }

    /// Whether a retry that only the budget refuses still waits its backoff before the call
    /// returns (see [`RetryPolicyBuilder::long_polling`]).
    ///
    /// ```
    /// let p = reattempt::RetryPolicy::builder().long_polling(true).build().unwrap();
    /// assert!(p.long_polling());
    /// assert!(!reattempt::RetryPolicy::default().long_polling());
    /// ```
    pub const fn long_polling(&self) -> bool {
        self.long_polling
    }

    /// What the retry and give-up events say about the error (default: its type's name only).
    ///
    /// ```
    /// use reattempt::{LogError, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().build().unwrap().log_error(), LogError::TypeName);
    /// ```
    pub const fn log_error(&self) -> LogError {
        self.log_error
    }

    /// The policy's fault injection, if set (feature `testing`: see
    /// [`RetryPolicyBuilder::inject_faults`]).
    ///
    /// ```
    /// assert!(reattempt::RetryPolicy::default().fault_injection().is_none());
    /// ```
    #[cfg(feature = "testing")]
    pub const fn fault_injection(&self) -> Option<&crate::testing::FaultInjection> {
        match &self.faults {
            Some(f) => Some(&f.setting),
            None => None,
        }
    }

    /// How many attempts have drawn for a fault through this policy since it was built (or
    /// [rewound](Self::rewind_faults)): the index of the next draw. 0 without fault injection.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::testing::FaultInjection;
    ///
    ///     let faults = FaultInjection::builder().rate(0.5).seed(1).build().unwrap();
    ///     let policy = RetryPolicy::builder().max_attempts(1).inject_faults(faults).build().unwrap();
    ///     for _ in 0..10 {
    ///         let _ = policy.retry(|| async { Ok::<_, std::io::Error>(()) }).await;
    ///     }
    ///     assert_eq!(policy.faults_drawn(), 10);
    ///     policy.rewind_faults();
    ///     assert_eq!(policy.faults_drawn(), 0);
    /// }
    /// ```
    #[cfg(feature = "testing")]
    pub fn faults_drawn(&self) -> u64 {
        self.faults
            .as_ref()
            .map_or(0, crate::testing::faults::Faults::drawn)
    }

    /// Starts the fault sequence again from its first draw: the next attempts through the policy
    /// are injected exactly as the first ones were (a rerun with a `static` policy).
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// RetryPolicy::default().rewind_faults(); // no fault injection: nothing to do
    /// ```
    #[cfg(feature = "testing")]
    pub fn rewind_faults(&self) {
        if let Some(f) = &self.faults {
            f.rewind();
        }
    }

    /// When a call hedges, if it does (see [`RetryPolicyBuilder::hedge_after`]).
    ///
    /// ```
    /// assert_eq!(reattempt::RetryPolicy::builder().build().unwrap().hedge_after(), None);
    /// ```
    pub const fn hedge_after(&self) -> Option<HedgeAfter> {
        self.hedge_after
    }

    /// The latencies of this policy's attempts, as seen by hedged calls (what a quantile
    /// `hedge_after` estimates from).
    ///
    /// ```
    /// let p = reattempt::RetryPolicy::builder().build().unwrap();
    /// assert!(p.latencies().quantile(0.95).is_none());
    /// ```
    pub const fn latencies(&self) -> &Latencies {
        &self.latencies
    }
}

impl Default for RetryPolicy {
    /// The defaults of [`RetryPolicy::builder`].
    fn default() -> Self {
        match Self::builder().build() {
            Ok(policy) => policy,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

/// Builds a [`RetryPolicy`]; every method is `const`, so a policy can live in a `static`.
///
/// ```
/// use std::time::Duration;
/// use reattempt::{RetryPolicy, PolicyError};
///
/// static POLICY: RetryPolicy = match RetryPolicy::builder().max_attempts(5).build() {
///     Ok(p) => p,
///     Err(_) => panic!("invalid policy"),
/// };
/// assert_eq!(POLICY.max_attempts(), 5);
///
/// let err = RetryPolicy::builder().max_attempts(0).build().unwrap_err();
/// assert_eq!(err, PolicyError::ZeroAttempts);
/// assert_eq!(err.field(), "max_attempts");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct RetryPolicyBuilder {
    // `None`: not set (the default), so that an error can say which of two settings is at fault.
    settings: PolicySettings,
    #[cfg(feature = "testing")]
    faults: Option<crate::testing::FaultInjection>,
}

impl RetryPolicyBuilder {
    /// The settings given so far (`None`: not set).
    ///
    /// ```
    /// use reattempt::{Preset, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().max_attempts(4).settings().max_attempts, Some(4));
    /// assert_eq!(Preset::Aws2026.policy().settings().max_attempts, Some(3));
    /// ```
    pub const fn settings(&self) -> PolicySettings {
        self.settings
    }

    /// A builder with each setting that is present in `settings` (the rest keep their defaults):
    /// how a config file's or the attribute's keys reach a policy.
    ///
    /// ```
    /// use reattempt::{RetryPolicy, RetryPolicyBuilder, runtime::PolicySettings};
    ///
    /// let settings = PolicySettings { max_attempts: Some(5), ..PolicySettings::default() };
    /// let policy = RetryPolicyBuilder::from_settings(settings).build().unwrap();
    /// assert_eq!(policy.max_attempts(), 5);
    /// assert_eq!(policy.delay(), RetryPolicy::DEFAULT_DELAY);
    /// assert_eq!(RetryPolicyBuilder::from(settings), RetryPolicyBuilder::from_settings(settings));
    /// ```
    pub const fn from_settings(settings: PolicySettings) -> Self {
        RetryPolicyBuilder {
            settings,
            #[cfg(feature = "testing")]
            faults: None,
        }
    }

    /// Total attempts, the first included (≥ 1; default 3). `u32::MAX` retries until the call's
    /// deadline or an error it does not retry ends it (see [`RetryPolicy::MAX_ATTEMPTS`]).
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.settings.max_attempts = Some(n);
        self
    }

    /// The first backoff delay (> 0; default 100 ms).
    pub const fn delay(mut self, d: Duration) -> Self {
        self.settings.delay = Some(d);
        self
    }

    /// The first backoff delay after a throttling error (the server asked to slow down:
    /// [`ErrorClass::Throttling`](crate::ErrorClass::Throttling)), which then grows as `delay`
    /// does (> 0; default `delay`; capped at `max_delay`, so that a preset's 1 s gives way to a
    /// lower ceiling set after it — `#[retryable]` refuses one above `max_delay` instead, as a
    /// setting the other makes dead). The AWS SDKs' 2026 standard mode backs off from 1 s after
    /// throttling and from 50 ms otherwise.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{Jitter, RetryPolicy};
    ///
    /// let policy = RetryPolicy::builder()
    ///     .delay(Duration::from_millis(50))
    ///     .throttling_delay(Duration::from_secs(1))
    ///     .jitter(Jitter::None)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(policy.throttling_delay(), Duration::from_secs(1));
    /// ```
    pub const fn throttling_delay(mut self, d: Duration) -> Self {
        self.settings.throttling_delay = Some(d);
        self
    }

    /// How the delay grows (default exponential).
    pub const fn backoff(mut self, b: Backoff) -> Self {
        self.settings.backoff = Some(b);
        self
    }

    /// The exponential growth factor (finite, ≥ 1; default 2). Only with exponential backoff.
    pub const fn multiplier(mut self, m: f64) -> Self {
        self.settings.multiplier = Some(m);
        self
    }

    /// The ceiling of one delay before jitter (> 0, ≥ `delay` and `throttling_delay`; default
    /// 20 s, or the longer of those two when one is longer and no ceiling was set).
    pub const fn max_delay(mut self, d: Duration) -> Self {
        self.settings.max_delay = Some(d);
        self
    }

    /// How delays are randomised (default full jitter).
    pub const fn jitter(mut self, j: Jitter) -> Self {
        self.settings.jitter = Some(j);
        self
    }

    /// A per-attempt time limit (> 0): a slower attempt is dropped and counts as a retryable failure.
    pub const fn timeout(mut self, d: Duration) -> Self {
        self.settings.timeout = Some(d);
        self
    }

    /// A limit on all attempts and sleeps of one call (> 0), counted from the first attempt's
    /// start.
    ///
    /// - No sleep starts that would end at or past it: the call ends with its last error instead.
    /// - With `timeout`, each attempt's limit is clipped to what remains, and once nothing
    ///   remains no attempt starts: the call ends with `Elapsed` without polling the body.
    /// - Without `timeout`, an attempt is never cut short: `max_elapsed` bounds only the sleeps.
    ///   The first attempt always runs (a call tries once, even under an enclosing call's
    ///   deadline that is already spent), and a retry starts only after a sleep that ended before
    ///   the deadline.
    ///
    /// A call nested in another's attempt inherits the enclosing deadline (the earlier wins) on
    /// the thread that polls it: a call moved to another task (`tokio::spawn`) inherits nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::RetryPolicy;
    ///
    /// let policy = RetryPolicy::builder()
    ///     .timeout(Duration::from_secs(1))
    ///     .max_elapsed(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(policy.max_elapsed(), Some(Duration::from_secs(10)));
    /// ```
    pub const fn max_elapsed(mut self, d: Duration) -> Self {
        self.settings.max_elapsed = Some(d);
        self
    }

    /// What the retry and give-up events say about the error: by default
    /// ([`LogError::TypeName`]) only its type's name, since an error's `Debug` may carry a secret
    /// (a `reqwest::Error` holds the URL, query string and API key included).
    /// [`LogError::Debug`] logs the whole error; [`LogError::None`] nothing of it.
    ///
    /// ```
    /// use reattempt::{LogError, RetryPolicy};
    ///
    /// // My errors hold no secrets: log them whole.
    /// let policy = RetryPolicy::builder().log_error(LogError::Debug).build().unwrap();
    /// assert_eq!(policy.log_error(), LogError::Debug);
    /// ```
    pub const fn log_error(mut self, log: LogError) -> Self {
        self.settings.log_error = Some(log);
        self
    }

    /// Hedging: when no attempt has answered within this delay of the last attempt's start, the
    /// next attempt starts alongside the ones in flight (Polly, gRPC and Envoy's hedging).
    ///
    /// - Attempts overlap; `max_attempts` counts every attempt, copies included (as gRPC's
    ///   hedging policy does).
    /// - The first `Ok` (that `retry_if_ok` accepts) is the call's result; every other copy is
    ///   dropped, which cancels it. A retryable error from one copy lets the next attempt start
    ///   after the usual backoff while the others go on; a non-retryable error ends the call.
    ///   When every copy failed and no retry is left, the last error is the result.
    /// - Every copy sees the call's [`context()`](crate::context()): the same idempotency key,
    ///   its own `attempt()`: send the key, and the server applies a hedged request once.
    /// - With a budget, each hedge is paid `retry_cost`, and, unlike a retry, it is not paid back
    ///   when the call succeeds (its copy did load the dependency): hedges live on the deposits of
    ///   calls that succeed at once, so they stop when the dependency is saturated; when the
    ///   budget cannot pay, no hedge starts and the attempts in flight go on. With a circuit
    ///   breaker, each copy takes its own permit, and a rejected hedge is not started.
    /// - [`HedgeAfter::Quantile`] (`"p95"`): the delay is that quantile of this policy's recent
    ///   attempt latencies ([`Latencies`]), so that about 5 % of calls hedge whatever the
    ///   dependency's speed.
    ///
    /// Must be longer than zero and, with `timeout`, shorter than it. Only the closure API (and
    /// `#[retryable]` on an `async fn`, which expands through it) hedges; the policy of a blocking
    /// call ignores it. A hedged call reads the clock when each attempt starts.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{HedgeAfter, RetryPolicy, context};
    ///
    ///     let policy = RetryPolicy::builder()
    ///         .hedge_after(HedgeAfter::Fixed(Duration::from_millis(50)))
    ///         .idempotent(true) // copies overlap: only a call safe to repeat is hedged
    ///         .build()
    ///         .unwrap();
    ///     let out: std::io::Result<u32> = policy
    ///         .retry(|| {
    ///             let attempt = context().unwrap().attempt();
    ///             async move {
    ///                 // The first copy is stuck; the hedge, started at 50 ms, answers.
    ///                 let took = if attempt == 1 { 10_000 } else { 10 };
    ///                 tokio::time::sleep(Duration::from_millis(took)).await;
    ///                 Ok(attempt)
    ///             }
    ///         })
    ///         .await;
    ///     assert_eq!(out.unwrap(), 2);
    /// }
    /// ```
    pub const fn hedge_after(mut self, h: HedgeAfter) -> Self {
        self.settings.hedge_after = Some(h);
        self
    }

    /// Retry at one layer (the SRE book's advice, enforced): when `true`, a call made inside an
    /// attempt of an enclosing retrying call that still has attempts left makes a single
    /// attempt (no hedge either, with `hedge_after`), and leaves the retrying to that call (it gives up with
    /// [`GiveUpReason::OuterRetries`](crate::GiveUpReason::OuterRetries)); once every enclosing
    /// call is on its last attempt (or has none: `max_attempts = 1`), it retries as its policy
    /// says. Outside any retrying call it changes nothing. Default `false`.
    ///
    /// "Enclosing" follows the poll, as `context()` does: any retrying call whose attempt is
    /// being polled on this thread, however deep; a task spawned from an attempt has none.
    /// Across services (feature `http`), the caller's attempts left travel in the request header
    /// `http::OUTER_ATTEMPTS_LEFT`, written by the tower `.http()` layer, the reqwest
    /// middleware or `http::outer_header()`, and read on the server by
    /// `tower::OuterRetryLayer` or `http::outer_call`: a handler's calls then see the caller as
    /// enclosing.
    ///
    /// The trade-off: three layers of 3 attempts each send up to 27 attempts to a dead leaf;
    /// with `one_layer` on the inner layers, 7 (each of the outer call's attempts but the last
    /// reaches the leaf once, and on its last one the layer below retries, and so on down:
    /// `(max_attempts − 1) × (layers − 1) + max_attempts`). An error that only an inner layer
    /// could cheaply retry (a reset connection to the leaf) is now retried by the outer layer,
    /// which repeats the whole chain's work above it.
    ///
    /// ```
    /// let policy = reattempt::RetryPolicy::builder().one_layer(true).build().unwrap();
    /// assert!(policy.one_layer());
    /// ```
    pub const fn one_layer(mut self, on: bool) -> Self {
        self.settings.one_layer = Some(on);
        self
    }

    /// Whether calls under this policy are safe to repeat after an attempt whose outcome is
    /// unknown: a reset, a broken pipe or an EOF after the request was written, a timeout after
    /// sending, a 500 ([`Effect::Unknown`](crate::Effect::Unknown)). The crate's own judgement
    /// ([`transient`](crate::transient), the classifications it ships, a per-attempt
    /// `timeout`, and a call with no retry predicate) retries such a failure only on an
    /// idempotent call; a predicate you wrote is obeyed as written.
    ///
    /// Not said (the default), a call is not idempotent: a plain `UPDATE … SET v = v + 1` cut
    /// by a server's crash is not run twice. Say `true` for a read, for a write keyed so that
    /// repeating it does nothing (`INSERT … ON CONFLICT DO NOTHING`), and for a write that
    /// sends the call's [`idempotency_key`](crate::RetryContext::idempotency_key) to a server
    /// that applies it once per key. A call can say it for itself
    /// (`#[retryable(idempotent = …)]`, the closure API's [`idempotent`](crate::Retry::idempotent),
    /// the client drivers' `.idempotent(…)`), over the policy. The HTTP drivers keep RFC 9110's
    /// method rule when neither says. With `false`, `hedge_after` is an error
    /// ([`PolicyError`]`::HedgeNotIdempotent`): hedged copies overlap.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    ///
    /// let reads = RetryPolicy::builder().idempotent(true).build().unwrap();
    /// assert_eq!(reads.idempotent(), Some(true));
    /// let hedged = RetryPolicy::builder()
    ///     .hedge_after(reattempt::HedgeAfter::Fixed(std::time::Duration::from_millis(50)))
    ///     .idempotent(false)
    ///     .build();
    /// assert_eq!(hedged.unwrap_err().field(), "hedge_after");
    /// ```
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.settings.idempotent = Some(idempotent);
        self
    }

    /// How a server's hint (`Retry-After`, `x-amz-retry-after`, gRPC's pushback: the
    /// `retry_after` hooks) makes the wait, over the schedule's jittered delay `t` (default
    /// [`HintMode::Floor`]: the wait is at least the hint, and a hint beyond `max_delay` ends the
    /// call). [`HintMode::Clamp`] clamps the hint to `[t, t + above]` and lets it pass
    /// `max_delay`, as the AWS SDKs' 2026 standard mode does ([`HintMode::AWS_2026`], which the
    /// AWS 2026 presets set). No wait ends at or past the call's deadline in either mode.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{HintMode, Jitter, RetryPolicy};
    ///
    /// let policy = RetryPolicy::builder()
    ///     .delay(Duration::from_millis(50))
    ///     .jitter(Jitter::None)
    ///     .hint_mode(HintMode::AWS_2026)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(policy.hint_mode(), HintMode::AWS_2026);
    /// ```
    pub const fn hint_mode(mut self, mode: HintMode) -> Self {
        self.settings.hint_mode = Some(mode);
        self
    }

    /// Long polling (default `false`): when the retry budget is all that refuses a retry, the
    /// call still waits the backoff that retry would have used before it returns its last
    /// outcome, so that a caller polling in a loop (SQS `ReceiveMessage`, Step Functions'
    /// `GetActivityTask`, SWF's `PollFor…Task`) does not hammer a failing service. No wait after
    /// a success, after the last attempt, or after an outcome that is not retried; as any sleep,
    /// the wait never ends at or past the call's deadline. The AWS SDKs' 2026 standard mode
    /// (botocore's `_LONG_POLLING_OPERATIONS`, smithy-rs's `RetrySpec::with_long_polling`).
    /// Needs a retry to refuse: an error with `max_attempts` 1
    /// ([`PolicyError`]`::LongPollingWithOneAttempt`).
    ///
    /// The wait holds the call's outcome, so only a call that can keep it waits:
    /// - the tower layer and the reqwest middleware with a budget: always;
    /// - `#[retryable]` with both `policy` and `budget` keys: always (its future is then `Send`
    ///   only if `T` and `E` are); with a literal `budget` and no `policy` the policy is not
    ///   long-polling;
    /// - the closure API ([`RetryPolicy::retry`]) with a budget: when the call keeps outcomes,
    ///   that is with a circuit breaker, a throttle, a bulkhead, or
    ///   [`Retry::long_polling_wait`](crate::Retry::long_polling_wait); a call with only
    ///   `.budget(…)` returns at once and emits one WARN event naming `long_polling_wait`
    ///   (`.budget` alone keeps the future `Send` whatever `T` and `E` are);
    /// - a hedged call (`hedge_after`), in every driver: never, it returns at once.
    ///
    /// The outcome is held only during this wait, never across an ordinary backoff sleep.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{Jitter, Preset, RetryBudget};
    ///
    ///     let policy = Preset::Aws2026.policy().jitter(Jitter::None).long_polling(true).build().unwrap();
    ///     let empty = Preset::Aws2026.budget().initial_tokens(0).build().unwrap();
    ///     let t0 = tokio::time::Instant::now();
    ///     let out = policy
    ///         .retry(|| async { Err::<(), _>(std::io::Error::other("500")) })
    ///         .budget(&empty)
    ///         .long_polling_wait()
    ///         .await;
    ///     assert!(out.is_err(), "no retry: the budget is empty");
    ///     assert_eq!(t0.elapsed(), Duration::from_millis(50), "but the backoff was waited");
    /// }
    /// ```
    pub const fn long_polling(mut self, on: bool) -> Self {
        self.settings.long_polling = Some(on);
        self
    }

    /// Injects faults into this policy's attempts (feature `testing`; off unless set): a rate of
    /// errors and added latency, drawn from a seed, so that a staging service rehearses an
    /// outage through the same code path (see [`FaultInjection`] for the rules). The check of
    /// it on each attempt is one branch on this setting.
    ///
    /// [`FaultInjection`]: crate::testing::FaultInjection
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::testing::FaultInjection;
    ///
    /// static POLICY: RetryPolicy = {
    ///     let faults = match FaultInjection::builder().rate(0.1).seed(7).build() {
    ///         Ok(f) => f,
    ///         Err(_) => panic!(),
    ///     };
    ///     match RetryPolicy::builder().inject_faults(faults).build() {
    ///         Ok(p) => p,
    ///         Err(_) => panic!(),
    ///     }
    /// };
    /// assert_eq!(POLICY.fault_injection().unwrap().rate(), 0.1);
    /// ```
    #[cfg(feature = "testing")]
    pub const fn inject_faults(mut self, faults: crate::testing::FaultInjection) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Checks every value and gives the policy, or the first rule broken (the rules are
    /// [`PolicySettings::check`], which `#[retryable]` runs at compile time on its keys).
    ///
    /// # Errors
    /// A [`PolicyError`] naming the field and the rule it breaks.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    ///
    /// let err = RetryPolicy::builder().multiplier(0.5).build().unwrap_err();
    /// assert_eq!(err.field(), "multiplier");
    /// assert_eq!(err.to_string(), "invalid `multiplier`: must be a finite number ≥ 1, got 0.5");
    /// ```
    pub const fn build(self) -> Result<RetryPolicy, PolicyError> {
        let mut settings = self.settings;
        // A `throttling_delay` above an explicit `max_delay` is capped, as every delay is: a
        // preset's 1 s gives way to a lower ceiling set after it.
        if let (Some(t), Some(max)) = (settings.throttling_delay, settings.max_delay)
            && t.as_nanos() > max.as_nanos()
        {
            settings.throttling_delay = Some(max);
        }
        let s = match settings.check() {
            Ok(s) => s,
            Err(e) => return Err(e),
        };
        Ok(RetryPolicy {
            max_attempts: s.max_attempts,
            delay: s.delay,
            throttling_delay: match s.throttling_delay {
                Some(t) => t,
                None => s.delay,
            },
            backoff: s.backoff,
            multiplier: s.multiplier,
            max_delay: s.max_delay,
            jitter: s.jitter,
            timeout: s.timeout,
            max_elapsed: s.max_elapsed,
            log_error: s.log_error,
            hedge_after: s.hedge_after,
            latencies: Latencies::new(),
            one_layer: s.one_layer,
            idempotent: s.idempotent,
            hint_mode: s.hint_mode,
            long_polling: s.long_polling,
            #[cfg(feature = "testing")]
            faults: match self.faults {
                Some(f) => Some(crate::testing::faults::Faults::new(f)),
                None => None,
            },
        })
    }
}

impl From<PolicySettings> for RetryPolicyBuilder {
    /// [`RetryPolicyBuilder::from_settings`].
    fn from(settings: PolicySettings) -> Self {
        Self::from_settings(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn defaults_match_the_design() {
        let p = RetryPolicy::default();
        assert_eq!(p.max_attempts(), 3);
        assert_eq!(p.delay(), 100 * MS);
        assert_eq!(p.backoff(), Backoff::Exponential);
        assert!((p.multiplier() - 2.0).abs() < f64::EPSILON);
        assert_eq!(p.max_delay(), Duration::from_secs(20));
        assert_eq!(p.jitter(), Jitter::Full);
        assert_eq!(p.timeout(), None);
        assert_eq!(p.max_elapsed(), None);
        assert_eq!(p.log_error(), LogError::TypeName);
    }

    // The rules' own tests (each rejection, by field) are retry-rules' (its settings.rs); these
    // check that the builder hands them every setting and builds what they give.

    #[test]
    fn the_builder_applies_the_rules() {
        let e = RetryPolicy::builder()
            .delay(100 * MS)
            .max_delay(50 * MS)
            .build()
            .unwrap_err();
        assert_eq!(e.field(), "delay");
        let e = RetryPolicy::builder()
            .max_delay(50 * MS)
            .build()
            .unwrap_err();
        assert_eq!(e.field(), "max_delay");
        let e = RetryPolicy::builder()
            .timeout(50 * MS)
            .hedge_after(HedgeAfter::Fixed(80 * MS))
            .build()
            .unwrap_err();
        assert_eq!(e.field(), "hedge_after");
    }

    #[test]
    fn default_ceiling_rises_to_a_long_delay() {
        let p = RetryPolicy::builder()
            .delay(Duration::from_secs(45))
            .build()
            .unwrap();
        assert_eq!(p.max_delay(), Duration::from_secs(45));
    }

    #[test]
    fn every_setting_reaches_the_policy() {
        let p = RetryPolicy::builder()
            .max_attempts(7)
            .delay(20 * MS)
            .backoff(Backoff::Linear)
            .max_delay(900 * MS)
            .jitter(Jitter::Equal)
            .timeout(300 * MS)
            .max_elapsed(5000 * MS)
            .log_error(LogError::Debug)
            .hedge_after(HedgeAfter::Fixed(100 * MS))
            .one_layer(true)
            .build()
            .unwrap();
        assert_eq!(
            (
                p.max_attempts(),
                p.delay(),
                p.backoff(),
                p.max_delay(),
                p.jitter()
            ),
            (7, 20 * MS, Backoff::Linear, 900 * MS, Jitter::Equal)
        );
        assert_eq!(
            (p.timeout(), p.max_elapsed(), p.log_error(), p.hedge_after()),
            (
                Some(300 * MS),
                Some(5000 * MS),
                LogError::Debug,
                Some(HedgeAfter::Fixed(100 * MS))
            )
        );
        assert!(p.one_layer());
        assert!((p.multiplier() - 2.0).abs() < f64::EPSILON);
    }

    #[test]
    fn extreme_but_valid_settings_build() {
        let p = RetryPolicy::builder()
            .max_attempts(RetryPolicy::MAX_ATTEMPTS)
            .multiplier(1e6)
            .max_delay(Duration::MAX)
            .max_elapsed(Duration::MAX)
            .timeout(Duration::MAX)
            .build()
            .unwrap();
        assert_eq!(p.max_attempts(), RetryPolicy::MAX_ATTEMPTS);
    }
}
