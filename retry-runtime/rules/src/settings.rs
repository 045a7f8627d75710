//! A retry schedule's settings and the rules they are held to, in the attribute, in a builder
//! and in a config file alike.

use std::time::Duration;

use crate::backoff::Backoff;
use crate::hedge::HedgeAfter;
use crate::hint::HintMode;
use crate::jitter::Jitter;
use crate::log::LogError;

/// A schedule's settings, each optional (absent: the default). The one way in which the
/// attribute's keys, the runtime's `RetryPolicyBuilder` and a config file's keys reach the rules
/// ([`check`](PolicySettings::check)); `RetryPolicyBuilder::from_settings` makes a builder
/// of them.
///
/// ```
/// use std::time::Duration;
/// use reattempt::runtime::PolicySettings;
///
/// let settings = PolicySettings { max_attempts: Some(5), ..PolicySettings::default() };
/// let checked = settings.check().unwrap();
/// assert_eq!(checked.max_attempts, 5);
/// assert_eq!(checked.delay, PolicySettings::DEFAULT_DELAY);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PolicySettings {
    /// Total attempts, the first included (≥ 1, at most [`MAX_ATTEMPTS`](Self::MAX_ATTEMPTS),
    /// or `u32::MAX` for that most; default 3).
    pub max_attempts: Option<u32>,
    /// The first backoff delay (> 0; default 100 ms).
    pub delay: Option<Duration>,
    /// The first backoff delay after a throttling error (> 0, ≤ `max_delay`; default `delay`).
    pub throttling_delay: Option<Duration>,
    /// How the delay grows (default exponential).
    pub backoff: Option<Backoff>,
    /// The exponential growth factor (finite, ≥ 1; default 2). Only with exponential backoff.
    pub multiplier: Option<f64>,
    /// The ceiling of one delay before jitter (> 0, ≥ `delay` and `throttling_delay`; default
    /// 20 s, or the longer of those two when one is longer and no ceiling was set).
    pub max_delay: Option<Duration>,
    /// How delays are randomised (default full jitter; a factor must be in (0, 1]).
    pub jitter: Option<Jitter>,
    /// A per-attempt time limit (> 0).
    pub timeout: Option<Duration>,
    /// A limit on all attempts and sleeps of one call (> 0).
    pub max_elapsed: Option<Duration>,
    /// What the retry and give-up events say about the error (default: its type's name).
    pub log_error: Option<LogError>,
    /// When a call hedges (> 0, and shorter than `timeout`; a quantile in (0, 100)).
    pub hedge_after: Option<HedgeAfter>,
    /// Whether the call retries at one layer only (default `false`).
    pub one_layer: Option<bool>,
    /// Whether a call may be repeated after an attempt whose outcome is unknown (default: not
    /// said, and then it may not). `Some(false)` forbids `hedge_after`.
    pub idempotent: Option<bool>,
    /// How a server's hint makes the wait (default [`HintMode::Floor`]).
    pub hint_mode: Option<HintMode>,
    /// Whether a retry that only the retry budget refuses still waits its backoff before the
    /// call returns (AWS's long-polling operations; default `false`; needs `max_attempts` ≥ 2).
    pub long_polling: Option<bool>,
}

/// Defaults and limits, as in the attribute's table (the runtime's `RetryPolicy` has each under
/// the same name).
impl PolicySettings {
    /// Total attempts, the first included.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// The most attempts a policy may allow (2²⁶ − 1, over 67 million): a call's attempt counter
    /// shares its word with the attempt's flags and the budget's bookkeeping, so that the call's
    /// future stays small.
    pub const MAX_ATTEMPTS: u32 = (1 << 26) - 1;
    /// The first backoff delay.
    pub const DEFAULT_DELAY: Duration = Duration::from_millis(100);
    /// The exponential growth factor.
    pub const DEFAULT_MULTIPLIER: f64 = 2.0;
    /// The ceiling of one delay, before jitter.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(20);

    /// No setting: every one has its default (the same as `default()`, in a `const`).
    ///
    /// ```
    /// assert_eq!(reattempt::runtime::PolicySettings::new(), reattempt::runtime::PolicySettings::default());
    /// ```
    pub const fn new() -> Self {
        PolicySettings {
            max_attempts: None,
            delay: None,
            throttling_delay: None,
            backoff: None,
            multiplier: None,
            max_delay: None,
            jitter: None,
            timeout: None,
            max_elapsed: None,
            log_error: None,
            hedge_after: None,
            one_layer: None,
            idempotent: None,
            hint_mode: None,
            long_polling: None,
        }
    }

    /// Checks every setting against the rules, and gives them all with each absent one's
    /// default, or the first rule broken. The runtime's `RetryPolicyBuilder::build` is this
    /// check; `#[retryable]` runs it at compile time on the attribute's keys.
    ///
    /// # Errors
    /// A [`PolicyError`] naming the field and the rule it breaks.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{PolicyError, runtime::PolicySettings};
    ///
    /// let settings = PolicySettings { max_attempts: Some(5), ..PolicySettings::default() };
    /// let checked = settings.check().unwrap();
    /// assert_eq!(checked.max_attempts, 5);
    /// assert_eq!(checked.delay, PolicySettings::DEFAULT_DELAY);
    ///
    /// let zero = PolicySettings { max_attempts: Some(0), ..PolicySettings::default() };
    /// assert_eq!(zero.check().unwrap_err(), PolicyError::ZeroAttempts);
    /// ```
    pub const fn check(&self) -> Result<CheckedSettings, PolicyError> {
        let max_attempts = match self.max_attempts {
            // "Until something else stops the call": the most a policy allows.
            Some(u32::MAX) => Self::MAX_ATTEMPTS,
            Some(n) => n,
            None => Self::DEFAULT_MAX_ATTEMPTS,
        };
        let backoff = match self.backoff {
            Some(b) => b,
            None => Backoff::Exponential,
        };
        let jitter = match self.jitter {
            Some(j) => j,
            None => Jitter::Full,
        };
        if max_attempts == 0 {
            return Err(PolicyError::ZeroAttempts);
        }
        if max_attempts > Self::MAX_ATTEMPTS {
            return Err(PolicyError::TooManyAttempts { max_attempts });
        }
        let delay = match self.delay {
            Some(d) => d,
            None => Self::DEFAULT_DELAY,
        };
        if delay.is_zero() {
            return Err(PolicyError::ZeroDuration { field: "delay" });
        }
        let multiplier = match self.multiplier {
            Some(m) => {
                if !matches!(backoff, Backoff::Exponential) {
                    return Err(PolicyError::MultiplierWithoutExponential { backoff });
                }
                if !m.is_finite() || m < 1.0 {
                    return Err(PolicyError::MultiplierBelowOne { multiplier: m });
                }
                m
            }
            None => Self::DEFAULT_MULTIPLIER,
        };
        let max_delay = match self.check_max_delay(delay) {
            Ok(d) => d,
            Err(e) => return Err(e),
        };
        let throttling_delay = match check_throttling_delay(self.throttling_delay, max_delay) {
            Ok(t) => t,
            Err(e) => return Err(e),
        };
        if let Jitter::Proportional(f) = jitter
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
        if self.hedge_after.is_some() && matches!(self.idempotent, Some(false)) {
            return Err(PolicyError::HedgeNotIdempotent);
        }
        let long_polling = matches!(self.long_polling, Some(true));
        // With one attempt no retry is ever refused by the budget alone: the wait never happens.
        if long_polling && max_attempts == 1 {
            return Err(PolicyError::LongPollingWithOneAttempt);
        }
        Ok(CheckedSettings {
            max_attempts,
            delay,
            throttling_delay,
            backoff,
            multiplier,
            max_delay,
            jitter,
            timeout: self.timeout,
            max_elapsed: self.max_elapsed,
            log_error: match self.log_error {
                Some(log) => log,
                None => LogError::TypeName,
            },
            hedge_after: self.hedge_after,
            one_layer: match self.one_layer {
                Some(on) => on,
                None => false,
            },
            idempotent: self.idempotent,
            hint_mode: match self.hint_mode {
                Some(mode) => mode,
                None => HintMode::Floor,
            },
            long_polling,
        })
    }
}

/// Every setting of a [`PolicySettings`] that passed [`check`](PolicySettings::check), each
/// absent one replaced by its default: what the runtime builds a `RetryPolicy` of.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct CheckedSettings {
    /// Total attempts, the first included.
    pub max_attempts: u32,
    /// The first backoff delay.
    pub delay: Duration,
    /// The first backoff delay after a throttling error, if set (else `delay`).
    pub throttling_delay: Option<Duration>,
    /// How the delay grows.
    pub backoff: Backoff,
    /// The exponential growth factor.
    pub multiplier: f64,
    /// The ceiling of one delay, before jitter.
    pub max_delay: Duration,
    /// How delays are randomised.
    pub jitter: Jitter,
    /// The per-attempt time limit, if any.
    pub timeout: Option<Duration>,
    /// The limit on all attempts and sleeps of one call, if any.
    pub max_elapsed: Option<Duration>,
    /// What the retry and give-up events say about the error.
    pub log_error: LogError,
    /// When a call hedges, if it does.
    pub hedge_after: Option<HedgeAfter>,
    /// Whether the call retries at one layer only.
    pub one_layer: bool,
    /// Whether a call may be repeated after an unknown outcome, if said.
    pub idempotent: Option<bool>,
    /// How a server's hint makes the wait.
    pub hint_mode: HintMode,
    /// Whether a retry refused by the budget alone still waits its backoff.
    pub long_polling: bool,
}

impl PolicySettings {
    /// The rules of `max_delay` (> 0, ≥ `delay`), or its default: 20 s, or the longer of
    /// `delay` and `throttling_delay` when one is longer (a default ceiling cuts neither).
    const fn check_max_delay(&self, delay: Duration) -> Result<Duration, PolicyError> {
        let longest = match self.throttling_delay {
            Some(t) if t.as_nanos() > delay.as_nanos() => t,
            _ => delay,
        };
        match self.max_delay {
            Some(d) if d.is_zero() => Err(PolicyError::ZeroDuration { field: "max_delay" }),
            Some(d) if delay.as_nanos() > d.as_nanos() => Err(if self.delay.is_some() {
                PolicyError::DelayAboveMaxDelay {
                    delay,
                    max_delay: d,
                }
            } else {
                // Only `max_delay` was set: it is the one at fault.
                PolicyError::MaxDelayBelowDefaultDelay { max_delay: d }
            }),
            Some(d) => Ok(d),
            None if longest.as_nanos() > Self::DEFAULT_MAX_DELAY.as_nanos() => Ok(longest),
            None => Ok(Self::DEFAULT_MAX_DELAY),
        }
    }
}

/// The rules of `throttling_delay`: longer than zero, at most `max_delay`; `delay` unless set.
const fn check_throttling_delay(
    throttling_delay: Option<Duration>,
    max_delay: Duration,
) -> Result<Option<Duration>, PolicyError> {
    match throttling_delay {
        Some(t) if t.is_zero() => Err(PolicyError::ZeroDuration {
            field: "throttling_delay",
        }),
        Some(t) if t.as_nanos() > max_delay.as_nanos() => {
            Err(PolicyError::ThrottlingDelayAboveMaxDelay {
                throttling_delay: t,
                max_delay,
            })
        }
        other => Ok(other),
    }
}

/// The rules of `hedge_after`: longer than zero, shorter than `timeout`, a quantile in (0, 100).
/// A quantile is shorter than `timeout` at both ends of what it may wait: its floor, and its
/// starting delay (what it waits until the estimate has samples; with a `timeout` at or below
/// it, every attempt is cut first, so no call would ever hedge).
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
            percentile,
            floor,
            start,
        }) => {
            if !(percentile > 0.0 && percentile < 100.0) {
                return Err(PolicyError::HedgeQuantileOutOfRange { percentile });
            }
            if let Some(t) = timeout {
                if floor.as_nanos() >= t.as_nanos() {
                    return Err(PolicyError::HedgeAfterNotBelowTimeout {
                        hedge_after: floor,
                        timeout: t,
                    });
                }
                if start.as_nanos() >= t.as_nanos() {
                    return Err(PolicyError::HedgeStartNotBelowTimeout { start, timeout: t });
                }
            }
        }
        None => {}
    }
    Ok(())
}

/// A policy value that breaks a rule; [`field`](PolicyError::field) names the setting.
///
/// ```
/// use reattempt::runtime::PolicySettings;
///
/// let settings = PolicySettings { multiplier: Some(0.5), ..PolicySettings::default() };
/// let err = settings.check().unwrap_err();
/// assert_eq!(err.field(), "multiplier");
/// assert_eq!(err.to_string(), "invalid `multiplier`: must be a finite number ≥ 1, got 0.5");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum PolicyError {
    /// `max_attempts` was 0; it counts the first attempt, so it must be at least 1.
    ZeroAttempts,
    /// `max_attempts` was above [`PolicySettings::MAX_ATTEMPTS`].
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
    /// `throttling_delay` was larger than `max_delay`.
    ThrottlingDelayAboveMaxDelay {
        /// The first delay after a throttling error.
        throttling_delay: Duration,
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
    /// A quantile `hedge_after`'s starting delay (what it waits before the estimate has samples)
    /// was not shorter than `timeout`: every attempt is cut before it, so no call would hedge.
    HedgeStartNotBelowTimeout {
        /// The quantile's starting delay.
        start: Duration,
        /// The per-attempt limit.
        timeout: Duration,
    },
    /// A `hedge_after` quantile outside (0, 100).
    HedgeQuantileOutOfRange {
        /// The percentile given.
        percentile: f64,
    },
    /// `hedge_after` with `idempotent` false: hedged copies overlap, and each may do the call's
    /// action, so a call that is not safe to repeat is never hedged.
    HedgeNotIdempotent,
    /// `long_polling` with `max_attempts` 1: the wait it adds comes only before a retry the
    /// budget refuses, and one attempt has no retry.
    LongPollingWithOneAttempt,
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
            PolicyError::ThrottlingDelayAboveMaxDelay { .. } => "throttling_delay",
            PolicyError::MaxDelayBelowDefaultDelay { .. } => "max_delay",
            PolicyError::JitterFactorOutOfRange { .. } => "jitter",
            PolicyError::HedgeAfterNotBelowTimeout { .. }
            | PolicyError::HedgeStartNotBelowTimeout { .. }
            | PolicyError::HedgeQuantileOutOfRange { .. }
            | PolicyError::HedgeNotIdempotent => "hedge_after",
            PolicyError::LongPollingWithOneAttempt => "long_polling",
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
                "must be at most {}, got {max_attempts} (for \"until the deadline\", write `u32::MAX`, 4294967295)",
                PolicySettings::MAX_ATTEMPTS
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
            PolicyError::ThrottlingDelayAboveMaxDelay {
                throttling_delay,
                max_delay,
            } => write!(
                f,
                "must not exceed `max_delay`: {throttling_delay:?} > {max_delay:?}"
            ),
            PolicyError::MaxDelayBelowDefaultDelay { max_delay } => write!(
                f,
                "must be at least `delay`, whose default is {:?} (`delay` was not set): {max_delay:?} < {:?}; raise `max_delay` or set a `delay` no longer than it",
                PolicySettings::DEFAULT_DELAY,
                PolicySettings::DEFAULT_DELAY
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
            PolicyError::HedgeStartNotBelowTimeout { start, timeout } => write!(
                f,
                "a quantile's starting delay (what it waits until it has seen enough latencies) must be shorter than `timeout` ({start:?} ≥ {timeout:?}): every attempt is cut before it, so no call would hedge; raise `timeout` above it, or use a fixed `hedge_after` below `timeout`"
            ),
            PolicyError::HedgeNotIdempotent => f.write_str(
                "hedges overlap with the attempt in flight, and each may do the call's action, but `idempotent` is false; remove `hedge_after`, or make the call safe to repeat (send an idempotency key) and set `idempotent` to true"
            ),
            PolicyError::LongPollingWithOneAttempt => f.write_str(
                "waits only before a retry the budget refuses, but `max_attempts` is 1 (no retry); remove `long_polling` or allow a retry"
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

    /// The runtime builder's setters, over the settings, so that these tests read as its own.
    #[derive(Clone, Copy)]
    struct Builder(PolicySettings);

    macro_rules! setters {
        ($($key:ident: $ty:ty),*) => {
            impl Builder {
                $(fn $key(mut self, v: $ty) -> Self {
                    self.0.$key = Some(v);
                    self
                })*

                fn build(self) -> Result<CheckedSettings, PolicyError> {
                    self.0.check()
                }
            }
        };
    }

    setters!(max_attempts: u32, delay: Duration, backoff: Backoff, multiplier: f64,
        max_delay: Duration, jitter: Jitter, timeout: Duration, max_elapsed: Duration,
        hedge_after: HedgeAfter, long_polling: bool, hint_mode: HintMode);

    fn builder() -> Builder {
        Builder(PolicySettings::new())
    }

    #[test]
    fn defaults_match_the_design() {
        let p = builder().build().unwrap();
        assert_eq!(p.max_attempts, 3);
        assert_eq!(p.delay, 100 * MS);
        assert_eq!(p.backoff, Backoff::Exponential);
        assert!((p.multiplier - 2.0).abs() < f64::EPSILON);
        assert_eq!(p.max_delay, Duration::from_secs(20));
        assert_eq!(p.jitter, Jitter::Full);
        assert_eq!(p.timeout, None);
        assert_eq!(p.max_elapsed, None);
        assert_eq!(p.log_error, LogError::TypeName);
        assert_eq!(p.hedge_after, None);
        assert!(!p.one_layer);
    }

    fn err(b: Builder) -> PolicyError {
        b.build().unwrap_err()
    }

    #[test]
    fn zero_attempts_is_rejected() {
        let e = err(builder().max_attempts(0));
        assert_eq!(e.field(), "max_attempts");
        assert!(e.to_string().contains("at least 1"));
    }

    #[test]
    fn zero_durations_are_rejected_by_field() {
        let b = builder();
        assert_eq!(err(b.delay(Duration::ZERO)).field(), "delay");
        assert_eq!(err(b.max_delay(Duration::ZERO)).field(), "max_delay");
        assert_eq!(err(b.timeout(Duration::ZERO)).field(), "timeout");
        assert_eq!(err(b.max_elapsed(Duration::ZERO)).field(), "max_elapsed");
    }

    #[test]
    fn bad_multipliers_are_rejected() {
        let b = builder();
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
        let e = err(builder().delay(3000 * MS).max_delay(2000 * MS));
        assert_eq!(e.field(), "delay");
        assert!(e.to_string().contains("max_delay"), "{e}");
    }

    #[test]
    fn a_max_delay_below_the_default_delay_blames_max_delay() {
        let e = err(builder().max_delay(50 * MS));
        assert_eq!(
            e,
            PolicyError::MaxDelayBelowDefaultDelay { max_delay: 50 * MS }
        );
        assert_eq!(e.field(), "max_delay");
        assert!(e.to_string().contains("whose default is 100ms"), "{e}");
        // Setting `delay`, even to its default value, makes it the one at fault.
        let e = err(builder().delay(100 * MS).max_delay(50 * MS));
        assert_eq!(e.field(), "delay");
        assert!(builder().delay(MS).max_delay(50 * MS).build().is_ok());
    }

    #[test]
    fn default_ceiling_rises_to_a_long_delay() {
        let p = builder().delay(Duration::from_secs(45)).build().unwrap();
        assert_eq!(p.max_delay, Duration::from_secs(45));
    }

    #[test]
    fn jitter_factor_outside_unit_interval_is_rejected() {
        let b = builder();
        for f in [0.0, -0.1, 1.01, f64::NAN] {
            assert_eq!(err(b.jitter(Jitter::Proportional(f))).field(), "jitter");
        }
        assert!(b.jitter(Jitter::Proportional(1.0)).build().is_ok());
    }

    #[test]
    fn hedge_after_is_checked() {
        let b = builder();
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
        // A quantile's starting delay (100 ms) beside a shorter timeout: it never hedges.
        let e = err(b.timeout(50 * MS).hedge_after(HedgeAfter::quantile(95.0)));
        assert_eq!(e.field(), "hedge_after");
        assert!(e.to_string().contains("starting delay"), "{e}");
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
        assert_eq!(p.hedge_after, Some(HedgeAfter::Fixed(50 * MS)));
    }

    #[test]
    fn long_polling_needs_a_retry() {
        let e = err(builder().max_attempts(1).long_polling(true));
        assert_eq!(e, PolicyError::LongPollingWithOneAttempt);
        assert_eq!(e.field(), "long_polling");
        assert!(e.to_string().starts_with("invalid `long_polling`: "), "{e}");
        assert!(
            builder()
                .max_attempts(1)
                .long_polling(false)
                .build()
                .is_ok()
        );
        let p = builder()
            .long_polling(true)
            .hint_mode(HintMode::AWS_2026)
            .build()
            .unwrap();
        assert!(p.long_polling);
        assert_eq!(p.hint_mode, HintMode::AWS_2026);
        assert_eq!(builder().build().unwrap().hint_mode, HintMode::Floor);
    }

    #[test]
    fn extreme_but_valid_settings_build() {
        let p = builder()
            .max_attempts(PolicySettings::MAX_ATTEMPTS)
            .multiplier(1e6)
            .max_delay(Duration::MAX)
            .max_elapsed(Duration::MAX)
            .timeout(Duration::MAX)
            .build()
            .unwrap();
        assert_eq!(p.max_attempts, PolicySettings::MAX_ATTEMPTS);
    }

    #[test]
    fn u32_max_attempts_is_the_most_and_the_counts_between_are_errors() {
        let p = builder().max_attempts(u32::MAX).build().unwrap();
        assert_eq!(p.max_attempts, PolicySettings::MAX_ATTEMPTS);
        for n in [PolicySettings::MAX_ATTEMPTS + 1, u32::MAX - 1] {
            assert_eq!(
                builder().max_attempts(n).build().unwrap_err(),
                PolicyError::TooManyAttempts { max_attempts: n }
            );
        }
    }
}
