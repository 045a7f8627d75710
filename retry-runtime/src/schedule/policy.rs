//! The retry schedule: how many attempts, how long between them, and the time limits.

use std::time::Duration;

use crate::engine::events::LogError;
use crate::schedule::backoff::Backoff;
use crate::schedule::delays::Delays;
use crate::schedule::hedge::{HedgeAfter, Latencies};
use crate::schedule::jitter::Jitter;

/// A validated retry schedule. Build one with [`RetryPolicy::builder`].
///
/// The builder's methods carry the attribute's key names, so one vocabulary serves
/// `#[retryable(...)]` and code that builds a policy at run time (from config, say).
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{Backoff, Jitter, RetryPolicy};
///
/// # fn main() -> Result<(), retry_runtime::PolicyError> {
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
}

/// Defaults, as in the attribute's table.
impl RetryPolicy {
    /// Total attempts, the first included.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// The most attempts a policy may allow (2²⁸ − 1, over 268 million): a call's attempt counter
    /// shares its word with the attempt's flags and the budget's bookkeeping, so that the call's
    /// future stays small.
    ///
    /// ```
    /// use retry_runtime::RetryPolicy;
    ///
    /// let err = RetryPolicy::builder().max_attempts(u32::MAX).build().unwrap_err();
    /// assert_eq!(err.field(), "max_attempts");
    /// assert!(RetryPolicy::builder().max_attempts(RetryPolicy::MAX_ATTEMPTS).build().is_ok());
    /// ```
    pub const MAX_ATTEMPTS: u32 = (1 << 28) - 1;
    /// The first backoff delay.
    pub const DEFAULT_DELAY: Duration = Duration::from_millis(100);
    /// The exponential growth factor.
    pub const DEFAULT_MULTIPLIER: f64 = 2.0;
    /// The ceiling of one delay, before jitter.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(20);

    /// A builder holding the defaults: 3 attempts, 100 ms exponential ×2 up to 20 s, full jitter,
    /// no timeout, no total limit.
    ///
    /// ```
    /// let policy = retry_runtime::RetryPolicy::builder().build().unwrap();
    /// assert_eq!(policy.max_attempts(), 3);
    /// ```
    pub const fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            delay: None,
            backoff: Backoff::Exponential,
            multiplier: None,
            max_delay: None,
            jitter: Jitter::Full,
            timeout: None,
            max_elapsed: None,
            log_error: LogError::TypeName,
            hedge_after: None,
            one_layer: false,
        }
    }

    /// Total attempts, the first included.
    ///
    /// ```
    /// let p = retry_runtime::RetryPolicy::builder().max_attempts(5).build().unwrap();
    /// assert_eq!(p.max_attempts(), 5);
    /// ```
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The first backoff delay.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let p = retry_runtime::RetryPolicy::builder().build().unwrap();
    /// assert_eq!(p.delay(), Duration::from_millis(100));
    /// ```
    pub const fn delay(&self) -> Duration {
        self.delay
    }

    /// How the delay grows.
    ///
    /// ```
    /// # use retry_runtime::{Backoff, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().build().unwrap().backoff(), Backoff::Exponential);
    /// ```
    pub const fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// The exponential growth factor.
    ///
    /// ```
    /// assert_eq!(retry_runtime::RetryPolicy::builder().build().unwrap().multiplier(), 2.0);
    /// ```
    pub const fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// The ceiling of one delay, before jitter.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use retry_runtime::RetryPolicy;
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
    /// # use retry_runtime::{Jitter, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().build().unwrap().jitter(), Jitter::Full);
    /// ```
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The per-attempt time limit, if any.
    ///
    /// ```
    /// assert_eq!(retry_runtime::RetryPolicy::builder().build().unwrap().timeout(), None);
    /// ```
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The limit on all attempts and sleeps of one call, if any.
    ///
    /// ```
    /// assert_eq!(retry_runtime::RetryPolicy::builder().build().unwrap().max_elapsed(), None);
    /// ```
    pub const fn max_elapsed(&self) -> Option<Duration> {
        self.max_elapsed
    }

    /// Whether the call retries at one layer only (see [`RetryPolicyBuilder::one_layer`]).
    ///
    /// ```
    /// let p = retry_runtime::RetryPolicy::builder().one_layer(true).build().unwrap();
    /// assert!(p.one_layer());
    /// assert!(!retry_runtime::RetryPolicy::default().one_layer());
    /// ```
    pub const fn one_layer(&self) -> bool {
        self.one_layer
    }

    /// What the retry and give-up events say about the error (default: its type's name only).
    ///
    /// ```
    /// # use retry_runtime::{LogError, RetryPolicy};
    /// assert_eq!(RetryPolicy::builder().build().unwrap().log_error(), LogError::TypeName);
    /// ```
    pub const fn log_error(&self) -> LogError {
        self.log_error
    }

    /// When a call hedges, if it does (see [`RetryPolicyBuilder::hedge_after`]).
    ///
    /// ```
    /// assert_eq!(retry_runtime::RetryPolicy::builder().build().unwrap().hedge_after(), None);
    /// ```
    pub const fn hedge_after(&self) -> Option<HedgeAfter> {
        self.hedge_after
    }

    /// The latencies of this policy's attempts, as seen by hedged calls (what a quantile
    /// `hedge_after` estimates from).
    ///
    /// ```
    /// let p = retry_runtime::RetryPolicy::builder().build().unwrap();
    /// assert!(p.latencies().quantile(0.95).is_none());
    /// ```
    pub const fn latencies(&self) -> &Latencies {
        &self.latencies
    }

    /// The sleeps between the attempts of one logical call, in order: `max_attempts − 1` of them,
    /// jittered with this thread's generator (see [`seed_rng`](crate::seed_rng)).
    ///
    /// Decorrelated jitter is stateful: each sleep depends on the previous one, so take one
    /// iterator per logical call.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use retry_runtime::RetryPolicy;
    /// let p = RetryPolicy::builder().max_attempts(4).build().unwrap();
    /// let sleeps: Vec<Duration> = p.delays().collect();
    /// assert_eq!(sleeps.len(), 3);
    /// assert!(sleeps.iter().all(|d| *d <= Duration::from_millis(400)));
    /// ```
    pub fn delays(&self) -> Delays<'_> {
        Delays::new(self, None)
    }

    /// As [`delays`](Self::delays), drawing from a generator seeded with `seed`: the same seed
    /// gives the same schedule.
    ///
    /// ```
    /// # use retry_runtime::RetryPolicy;
    /// let p = RetryPolicy::builder().max_attempts(6).build().unwrap();
    /// assert!(p.delays_seeded(9).eq(p.delays_seeded(9)));
    /// ```
    pub fn delays_seeded(&self, seed: u64) -> Delays<'_> {
        Delays::new(self, Some(seed))
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
/// use retry_runtime::{RetryPolicy, PolicyError};
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
    max_attempts: u32,
    // `None`: not set (the default), so that an error can say which of two settings is at fault.
    delay: Option<Duration>,
    backoff: Backoff,
    multiplier: Option<f64>,
    max_delay: Option<Duration>,
    jitter: Jitter,
    timeout: Option<Duration>,
    max_elapsed: Option<Duration>,
    log_error: LogError,
    hedge_after: Option<HedgeAfter>,
    one_layer: bool,
}

impl RetryPolicyBuilder {
    /// Total attempts, the first included (≥ 1; default 3).
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// The first backoff delay (> 0; default 100 ms).
    pub const fn delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }

    /// How the delay grows (default exponential).
    pub const fn backoff(mut self, b: Backoff) -> Self {
        self.backoff = b;
        self
    }

    /// The exponential growth factor (finite, ≥ 1; default 2). Only with exponential backoff.
    pub const fn multiplier(mut self, m: f64) -> Self {
        self.multiplier = Some(m);
        self
    }

    /// The ceiling of one delay before jitter (> 0, ≥ `delay`; default 20 s, or `delay` when that
    /// is larger and no ceiling was set).
    pub const fn max_delay(mut self, d: Duration) -> Self {
        self.max_delay = Some(d);
        self
    }

    /// How delays are randomised (default full jitter).
    pub const fn jitter(mut self, j: Jitter) -> Self {
        self.jitter = j;
        self
    }

    /// A per-attempt time limit (> 0): a slower attempt is dropped and counts as a retryable failure.
    pub const fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
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
    /// use retry_runtime::RetryPolicy;
    ///
    /// let policy = RetryPolicy::builder()
    ///     .timeout(Duration::from_secs(1))
    ///     .max_elapsed(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(policy.max_elapsed(), Some(Duration::from_secs(10)));
    /// ```
    pub const fn max_elapsed(mut self, d: Duration) -> Self {
        self.max_elapsed = Some(d);
        self
    }

    /// What the retry and give-up events say about the error: by default
    /// ([`LogError::TypeName`]) only its type's name, since an error's `Debug` may carry a secret
    /// (a `reqwest::Error` holds the URL, query string and API key included).
    /// [`LogError::Debug`] logs the whole error; [`LogError::None`] nothing of it.
    ///
    /// ```
    /// use retry_runtime::{LogError, RetryPolicy};
    ///
    /// // My errors hold no secrets: log them whole.
    /// let policy = RetryPolicy::builder().log_error(LogError::Debug).build().unwrap();
    /// assert_eq!(policy.log_error(), LogError::Debug);
    /// ```
    pub const fn log_error(mut self, log: LogError) -> Self {
        self.log_error = log;
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
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use retry_runtime::{HedgeAfter, RetryPolicy, context};
    ///
    /// let policy = RetryPolicy::builder()
    ///     .hedge_after(HedgeAfter::Fixed(Duration::from_millis(50)))
    ///     .build()
    ///     .unwrap();
    /// let out: std::io::Result<u32> = policy
    ///     .retry(|| {
    ///         let attempt = context().unwrap().attempt();
    ///         async move {
    ///             // The first copy is stuck; the hedge, started at 50 ms, answers.
    ///             let took = if attempt == 1 { 10_000 } else { 10 };
    ///             tokio::time::sleep(Duration::from_millis(took)).await;
    ///             Ok(attempt)
    ///         }
    ///     })
    ///     .await;
    /// assert_eq!(out.unwrap(), 2);
    /// # }
    /// ```
    pub const fn hedge_after(mut self, h: HedgeAfter) -> Self {
        self.hedge_after = Some(h);
        self
    }

    /// Retry at one layer (the SRE book's advice, enforced): when `true`, a call made inside an
    /// attempt of an enclosing retrying call that still has attempts left makes a single
    /// attempt, and leaves the retrying to that call (it gives up with
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
    /// let policy = retry_runtime::RetryPolicy::builder().one_layer(true).build().unwrap();
    /// assert!(policy.one_layer());
    /// ```
    pub const fn one_layer(mut self, on: bool) -> Self {
        self.one_layer = on;
        self
    }

    /// Checks every value and gives the policy, or the first rule broken.
    ///
    /// # Errors
    /// A [`PolicyError`] naming the field and the rule it breaks.
    pub const fn build(self) -> Result<RetryPolicy, PolicyError> {
        if self.max_attempts == 0 {
            return Err(PolicyError::ZeroAttempts);
        }
        if self.max_attempts > RetryPolicy::MAX_ATTEMPTS {
            return Err(PolicyError::TooManyAttempts {
                max_attempts: self.max_attempts,
            });
        }
        let delay = match self.delay {
            Some(d) => d,
            None => RetryPolicy::DEFAULT_DELAY,
        };
        if delay.is_zero() {
            return Err(PolicyError::ZeroDuration { field: "delay" });
        }
        let multiplier = match self.multiplier {
            Some(m) => {
                if !matches!(self.backoff, Backoff::Exponential) {
                    return Err(PolicyError::MultiplierWithoutExponential {
                        backoff: self.backoff,
                    });
                }
                if !m.is_finite() || m < 1.0 {
                    return Err(PolicyError::MultiplierBelowOne { multiplier: m });
                }
                m
            }
            None => RetryPolicy::DEFAULT_MULTIPLIER,
        };
        let max_delay = match self.max_delay {
            Some(d) => {
                if d.is_zero() {
                    return Err(PolicyError::ZeroDuration { field: "max_delay" });
                }
                if delay.as_nanos() > d.as_nanos() {
                    return Err(if self.delay.is_some() {
                        PolicyError::DelayAboveMaxDelay {
                            delay,
                            max_delay: d,
                        }
                    } else {
                        // Only `max_delay` was set: it is the one at fault.
                        PolicyError::MaxDelayBelowDefaultDelay { max_delay: d }
                    });
                }
                d
            }
            None if delay.as_nanos() > RetryPolicy::DEFAULT_MAX_DELAY.as_nanos() => delay,
            None => RetryPolicy::DEFAULT_MAX_DELAY,
        };
        if let Jitter::Proportional(f) = self.jitter
            && !Jitter::factor_is_valid(f)
        {
            return Err(PolicyError::JitterFactorOutOfRange { factor: f });
        }
        if let Some(d) = self.timeout
            && d.is_zero()
        {
            return Err(PolicyError::ZeroDuration { field: "timeout" });
        }
        if let Some(d) = self.max_elapsed
            && d.is_zero()
        {
            return Err(PolicyError::ZeroDuration {
                field: "max_elapsed",
            });
        }
        if let Err(e) = check_hedge(self.hedge_after, self.timeout) {
            return Err(e);
        }
        Ok(RetryPolicy {
            max_attempts: self.max_attempts,
            delay,
            backoff: self.backoff,
            multiplier,
            max_delay,
            jitter: self.jitter,
            timeout: self.timeout,
            max_elapsed: self.max_elapsed,
            log_error: self.log_error,
            hedge_after: self.hedge_after,
            latencies: Latencies::new(),
            one_layer: self.one_layer,
        })
    }
}

/// The rules of `hedge_after`: longer than zero, shorter than `timeout`, a quantile in (0, 100).
const fn check_hedge(
    hedge_after: Option<HedgeAfter>,
    timeout: Option<Duration>,
) -> Result<(), PolicyError> {
    match hedge_after {
        Some(HedgeAfter::Fixed(d)) => {
            if d.is_zero() {
                return Err(PolicyError::ZeroDuration {
                    field: "hedge_after",
                });
            }
            if let Some(t) = timeout
                && d.as_nanos() >= t.as_nanos()
            {
                return Err(PolicyError::HedgeAfterNotBelowTimeout {
                    hedge_after: d,
                    timeout: t,
                });
            }
        }
        Some(HedgeAfter::Quantile {
            percentile, floor, ..
        }) => {
            if !(percentile > 0.0 && percentile < 100.0) {
                return Err(PolicyError::HedgeQuantileOutOfRange { percentile });
            }
            if let Some(t) = timeout
                && floor.as_nanos() >= t.as_nanos()
            {
                return Err(PolicyError::HedgeAfterNotBelowTimeout {
                    hedge_after: floor,
                    timeout: t,
                });
            }
        }
        None => {}
    }
    Ok(())
}

/// A schedule's settings, each optional (absent: the builder's default). The one way in which
/// the attribute's keys and a config file's keys reach [`RetryPolicy::builder`].
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{PolicySettings, RetryPolicy};
///
/// let settings = PolicySettings { max_attempts: Some(5), ..PolicySettings::default() };
/// let policy = settings.builder().build().unwrap();
/// assert_eq!(policy.max_attempts(), 5);
/// assert_eq!(policy.delay(), RetryPolicy::DEFAULT_DELAY);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PolicySettings {
    /// See [`RetryPolicyBuilder::max_attempts`].
    pub max_attempts: Option<u32>,
    /// See [`RetryPolicyBuilder::delay`].
    pub delay: Option<Duration>,
    /// See [`RetryPolicyBuilder::backoff`].
    pub backoff: Option<Backoff>,
    /// See [`RetryPolicyBuilder::multiplier`].
    pub multiplier: Option<f64>,
    /// See [`RetryPolicyBuilder::max_delay`].
    pub max_delay: Option<Duration>,
    /// See [`RetryPolicyBuilder::jitter`].
    pub jitter: Option<Jitter>,
    /// See [`RetryPolicyBuilder::timeout`].
    pub timeout: Option<Duration>,
    /// See [`RetryPolicyBuilder::max_elapsed`].
    pub max_elapsed: Option<Duration>,
    /// See [`RetryPolicyBuilder::log_error`].
    pub log_error: Option<LogError>,
    /// See [`RetryPolicyBuilder::hedge_after`].
    pub hedge_after: Option<HedgeAfter>,
    /// See [`RetryPolicyBuilder::one_layer`].
    pub one_layer: Option<bool>,
}

impl PolicySettings {
    /// A builder with each setting that is present.
    pub const fn builder(&self) -> RetryPolicyBuilder {
        let mut b = RetryPolicy::builder();
        if let Some(n) = self.max_attempts {
            b = b.max_attempts(n);
        }
        if let Some(d) = self.delay {
            b = b.delay(d);
        }
        if let Some(x) = self.backoff {
            b = b.backoff(x);
        }
        if let Some(m) = self.multiplier {
            b = b.multiplier(m);
        }
        if let Some(d) = self.max_delay {
            b = b.max_delay(d);
        }
        if let Some(j) = self.jitter {
            b = b.jitter(j);
        }
        if let Some(d) = self.timeout {
            b = b.timeout(d);
        }
        if let Some(d) = self.max_elapsed {
            b = b.max_elapsed(d);
        }
        if let Some(log) = self.log_error {
            b = b.log_error(log);
        }
        if let Some(h) = self.hedge_after {
            b = b.hedge_after(h);
        }
        if let Some(on) = self.one_layer {
            b = b.one_layer(on);
        }
        b
    }
}

/// A policy value that breaks a rule; [`field`](PolicyError::field) names the setting.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::RetryPolicy;
///
/// let err = RetryPolicy::builder().multiplier(0.5).build().unwrap_err();
/// assert_eq!(err.field(), "multiplier");
/// assert_eq!(err.to_string(), "invalid `multiplier`: must be a finite number ≥ 1, got 0.5");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum PolicyError {
    /// `max_attempts` was 0; it counts the first attempt, so it must be at least 1.
    ZeroAttempts,
    /// `max_attempts` was above [`RetryPolicy::MAX_ATTEMPTS`].
    TooManyAttempts {
        /// The value given.
        max_attempts: u32,
    },
    /// A duration that must be positive was zero.
    ZeroDuration {
        /// The setting: `delay`, `max_delay`, `timeout` or `max_elapsed`.
        field: &'static str,
    },
    /// `multiplier` was below 1, infinite or not a number.
    MultiplierBelowOne {
        /// The value given.
        multiplier: f64,
    },
    /// `multiplier` was set with a backoff that does not use it.
    MultiplierWithoutExponential {
        /// The backoff chosen.
        backoff: Backoff,
    },
    /// `delay` was larger than `max_delay`.
    DelayAboveMaxDelay {
        /// The first delay.
        delay: Duration,
        /// The ceiling.
        max_delay: Duration,
    },
    /// `max_delay` was set below the default `delay` (100 ms), and `delay` was not set.
    MaxDelayBelowDefaultDelay {
        /// The ceiling.
        max_delay: Duration,
    },
    /// A proportional jitter factor outside (0, 1].
    JitterFactorOutOfRange {
        /// The value given.
        factor: f64,
    },
    /// `hedge_after` (a fixed delay, or a quantile's floor) was not shorter than `timeout`: no
    /// attempt would live long enough to be hedged.
    HedgeAfterNotBelowTimeout {
        /// The hedge delay (or the quantile's floor).
        hedge_after: Duration,
        /// The per-attempt limit.
        timeout: Duration,
    },
    /// A `hedge_after` quantile outside (0, 100).
    HedgeQuantileOutOfRange {
        /// The percentile given.
        percentile: f64,
    },
}

impl PolicyError {
    /// The name of the setting at fault, as spelled in the attribute and the builder.
    pub const fn field(&self) -> &'static str {
        match self {
            PolicyError::ZeroAttempts | PolicyError::TooManyAttempts { .. } => "max_attempts",
            PolicyError::ZeroDuration { field } => field,
            PolicyError::MultiplierBelowOne { .. }
            | PolicyError::MultiplierWithoutExponential { .. } => "multiplier",
            PolicyError::DelayAboveMaxDelay { .. } => "delay",
            PolicyError::MaxDelayBelowDefaultDelay { .. } => "max_delay",
            PolicyError::JitterFactorOutOfRange { .. } => "jitter",
            PolicyError::HedgeAfterNotBelowTimeout { .. }
            | PolicyError::HedgeQuantileOutOfRange { .. } => "hedge_after",
        }
    }
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid `{}`: ", self.field())?;
        match self {
            PolicyError::ZeroAttempts => {
                f.write_str("must be at least 1 (it counts the first attempt)")
            }
            PolicyError::TooManyAttempts { max_attempts } => write!(
                f,
                "must be at most {}, got {max_attempts}",
                RetryPolicy::MAX_ATTEMPTS
            ),
            PolicyError::ZeroDuration { .. } => f.write_str("must be longer than zero"),
            PolicyError::MultiplierBelowOne { multiplier } => {
                write!(f, "must be a finite number ≥ 1, got {multiplier}")
            }
            PolicyError::MultiplierWithoutExponential { backoff } => write!(
                f,
                "only applies to exponential backoff, but backoff is \"{backoff}\"; remove it or use exponential backoff"
            ),
            PolicyError::DelayAboveMaxDelay { delay, max_delay } => {
                write!(f, "must not exceed `max_delay`: {delay:?} > {max_delay:?}")
            }
            PolicyError::MaxDelayBelowDefaultDelay { max_delay } => write!(
                f,
                "must be at least `delay`, whose default is {:?} (`delay` was not set): {max_delay:?} < {:?}; raise `max_delay` or set a `delay` no longer than it",
                RetryPolicy::DEFAULT_DELAY,
                RetryPolicy::DEFAULT_DELAY
            ),
            PolicyError::JitterFactorOutOfRange { factor } => {
                write!(f, "a jitter factor must be in (0, 1], got {factor}")
            }
            PolicyError::HedgeAfterNotBelowTimeout {
                hedge_after,
                timeout,
            } => write!(
                f,
                "must be shorter than `timeout` ({hedge_after:?} ≥ {timeout:?}): an attempt is cut before it could be hedged"
            ),
            PolicyError::HedgeQuantileOutOfRange { percentile } => {
                write!(
                    f,
                    "a quantile must be above p0 and below p100, got p{percentile}"
                )
            }
        }
    }
}

impl std::error::Error for PolicyError {}

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

    fn err(b: RetryPolicyBuilder) -> PolicyError {
        b.build().unwrap_err()
    }

    #[test]
    fn zero_attempts_is_rejected() {
        let e = err(RetryPolicy::builder().max_attempts(0));
        assert_eq!(e.field(), "max_attempts");
        assert!(e.to_string().contains("at least 1"));
    }

    #[test]
    fn zero_durations_are_rejected_by_field() {
        let b = RetryPolicy::builder();
        assert_eq!(err(b.delay(Duration::ZERO)).field(), "delay");
        assert_eq!(err(b.max_delay(Duration::ZERO)).field(), "max_delay");
        assert_eq!(err(b.timeout(Duration::ZERO)).field(), "timeout");
        assert_eq!(err(b.max_elapsed(Duration::ZERO)).field(), "max_elapsed");
    }

    #[test]
    fn bad_multipliers_are_rejected() {
        let b = RetryPolicy::builder();
        for m in [0.5, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(err(b.multiplier(m)).field(), "multiplier", "{m}");
        }
        assert_eq!(
            err(b.backoff(Backoff::Fixed).multiplier(2.0)),
            PolicyError::MultiplierWithoutExponential {
                backoff: Backoff::Fixed
            }
        );
        assert_eq!(
            err(b.backoff(Backoff::Linear).multiplier(2.0)).field(),
            "multiplier"
        );
        assert!(b.multiplier(1.0).build().is_ok());
    }

    #[test]
    fn delay_above_max_delay_is_rejected() {
        let e = err(RetryPolicy::builder().delay(3000 * MS).max_delay(2000 * MS));
        assert_eq!(e.field(), "delay");
        assert!(e.to_string().contains("max_delay"), "{e}");
    }

    #[test]
    fn a_max_delay_below_the_default_delay_blames_max_delay() {
        let e = err(RetryPolicy::builder().max_delay(50 * MS));
        assert_eq!(
            e,
            PolicyError::MaxDelayBelowDefaultDelay { max_delay: 50 * MS }
        );
        assert_eq!(e.field(), "max_delay");
        assert!(e.to_string().contains("whose default is 100ms"), "{e}");
        // Setting `delay`, even to its default value, makes it the one at fault.
        let e = err(RetryPolicy::builder().delay(100 * MS).max_delay(50 * MS));
        assert_eq!(e.field(), "delay");
        assert!(
            RetryPolicy::builder()
                .delay(MS)
                .max_delay(50 * MS)
                .build()
                .is_ok()
        );
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
    fn jitter_factor_outside_unit_interval_is_rejected() {
        let b = RetryPolicy::builder();
        for f in [0.0, -0.1, 1.01, f64::NAN] {
            assert_eq!(err(b.jitter(Jitter::Proportional(f))).field(), "jitter");
        }
        assert!(b.jitter(Jitter::Proportional(1.0)).build().is_ok());
    }

    #[test]
    fn hedge_after_is_checked() {
        let b = RetryPolicy::builder();
        assert_eq!(
            err(b.hedge_after(HedgeAfter::Fixed(Duration::ZERO))).field(),
            "hedge_after"
        );
        let e = err(b.timeout(50 * MS).hedge_after(HedgeAfter::Fixed(80 * MS)));
        assert_eq!(
            e,
            PolicyError::HedgeAfterNotBelowTimeout {
                hedge_after: 80 * MS,
                timeout: 50 * MS
            }
        );
        assert!(e.to_string().contains("shorter than `timeout`"), "{e}");
        for q in [0.0, 100.0, -1.0, f64::NAN] {
            assert_eq!(
                err(b.hedge_after(HedgeAfter::quantile(q))).field(),
                "hedge_after"
            );
        }
        let p = b
            .timeout(80 * MS)
            .hedge_after(HedgeAfter::Fixed(50 * MS))
            .build()
            .unwrap();
        assert_eq!(p.hedge_after(), Some(HedgeAfter::Fixed(50 * MS)));
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
