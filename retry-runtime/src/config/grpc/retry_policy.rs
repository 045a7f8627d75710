//! A6's `retryPolicy`, built in code or read from a service config.

use std::time::Duration;

use ::tonic::Code;

use super::attempts::MaxAttempts;
use super::codes::{Codes, check_no_ok};
use super::error::{ServiceConfigError, invalid};
use super::json::{ProtoDuration, RawRetryPolicy, required};

/// A6's `retryPolicy`: up to `maxAttempts` attempts (capped at 5 unless the client raises the
/// cap), the `n`-th retry after `min(initialBackoff × backoffMultiplier^(n-1), maxBackoff)`
/// (A6 then applies a jitter of ±20 %), on the `retryableStatusCodes`.
///
/// ```
/// use std::time::Duration;
/// use reattempt::tonic::GrpcRetryPolicy;
/// use tonic::Code;
///
/// let policy = GrpcRetryPolicy::new(
///     4, Duration::from_millis(100), Duration::from_secs(1), 2.0, &[Code::Unavailable],
/// )?;
/// assert_eq!(policy.max_attempts(), 4);
/// assert!(policy.retryable_status_codes().contains(Code::Unavailable));
/// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcRetryPolicy {
    max_attempts: MaxAttempts,
    initial_backoff: Duration,
    max_backoff: Duration,
    backoff_multiplier: f64,
    retryable_status_codes: Codes,
}

impl GrpcRetryPolicy {
    /// A retry policy built in code, validated by A6's rules with the errors of a JSON config
    /// (their `field` is the JSON key: `maxAttempts`, …): `max_attempts` at least 2 (above 5 it
    /// counts as 5, as from JSON; see [`with_max_attempts_cap`](Self::with_max_attempts_cap)),
    /// both backoffs greater than 0, `backoff_multiplier` a finite number greater than 0,
    /// `retryable_status_codes` non-empty and without `Ok`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryPolicy, ServiceConfigError};
    /// use tonic::Code;
    ///
    /// let err = GrpcRetryPolicy::new(3, Duration::ZERO, Duration::from_secs(1), 2.0, &[Code::Unavailable])
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "initialBackoff: must be greater than 0");
    /// let err = GrpcRetryPolicy::new(3, Duration::from_secs(1), Duration::from_secs(1), 2.0, &[])
    ///     .unwrap_err();
    /// assert_eq!(err, ServiceConfigError::Invalid { field: "retryableStatusCodes".into(), rule: "must not be empty" });
    /// ```
    ///
    /// # Errors
    ///
    /// [`ServiceConfigError::Invalid`] naming the first value that breaks a rule.
    pub fn new(
        max_attempts: u32,
        initial_backoff: Duration,
        max_backoff: Duration,
        backoff_multiplier: f64,
        retryable_status_codes: &[Code],
    ) -> Result<Self, ServiceConfigError> {
        GrpcRetryPolicy::check(
            i128::from(max_attempts),
            ProtoDuration::positive(initial_backoff),
            ProtoDuration::positive(max_backoff),
            backoff_multiplier,
            Codes::new(retryable_status_codes),
        )
    }

    /// The policy with another cap on `max_attempts` (A6's default is 5), as
    /// [`ServiceConfig::with_max_attempts_cap`](super::ServiceConfig::with_max_attempts_cap) sets
    /// it for a whole config.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(9, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.max_attempts(), 5);
    /// assert_eq!(policy.with_max_attempts_cap(10).max_attempts(), 9);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn with_max_attempts_cap(self, cap: u32) -> Self {
        GrpcRetryPolicy {
            max_attempts: self.max_attempts.with_cap(cap),
            ..self
        }
    }

    /// The most attempts a call makes, the first included: the configured `maxAttempts`, at
    /// most the cap (5 by default).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.max_attempts(), 2);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.get()
    }

    /// `initialBackoff`: the base of the first retry's delay.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.initial_backoff(), Duration::from_millis(10));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// `maxBackoff`: the ceiling of a delay (before A6's ±20 % jitter).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.max_backoff(), Duration::from_secs(1));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// `backoffMultiplier`: each delay's growth (A6 allows any value above 0, below 1 too).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 1.5, &[Code::Unavailable])?;
    /// assert_eq!(policy.backoff_multiplier(), 1.5);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn backoff_multiplier(&self) -> f64 {
        self.backoff_multiplier
    }

    /// `retryableStatusCodes`: the codes whose failure is retried.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{Codes, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let codes = [Code::Unavailable, Code::Aborted];
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &codes)?;
    /// assert_eq!(policy.retryable_status_codes(), Codes::new(&codes));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn retryable_status_codes(&self) -> Codes {
        self.retryable_status_codes
    }

    /// A6's rules, in A6's order; the fields named as in JSON, relative to the policy.
    fn check(
        max_attempts: i128,
        initial_backoff: ProtoDuration,
        max_backoff: ProtoDuration,
        backoff_multiplier: f64,
        retryable_status_codes: Codes,
    ) -> Result<Self, ServiceConfigError> {
        let max_attempts = MaxAttempts::check(max_attempts)?;
        let initial_backoff = initial_backoff.positive_or("initialBackoff")?;
        let max_backoff = max_backoff.positive_or("maxBackoff")?;
        if !(backoff_multiplier.is_finite() && backoff_multiplier > 0.0) {
            return Err(invalid(
                "backoffMultiplier",
                "must be a finite number greater than 0",
            ));
        }
        if retryable_status_codes.is_empty() {
            return Err(invalid("retryableStatusCodes", "must not be empty"));
        }
        check_no_ok(retryable_status_codes, "retryableStatusCodes")?;
        Ok(GrpcRetryPolicy {
            max_attempts,
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            retryable_status_codes,
        })
    }

    pub(super) fn from_raw(raw: &RawRetryPolicy) -> Result<Self, ServiceConfigError> {
        // Each field read (present, of its type, well formed) in A6's order, then the rules.
        let max_attempts = required(raw.max_attempts.as_ref(), "maxAttempts")?;
        let initial_backoff = required(raw.initial_backoff.as_ref(), "initialBackoff")?;
        let max_backoff = required(raw.max_backoff.as_ref(), "maxBackoff")?;
        let backoff_multiplier = required(raw.backoff_multiplier.as_ref(), "backoffMultiplier")?;
        let codes = required(raw.retryable_status_codes.as_ref(), "retryableStatusCodes")?;
        GrpcRetryPolicy::check(
            max_attempts,
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            codes,
        )
    }
}
