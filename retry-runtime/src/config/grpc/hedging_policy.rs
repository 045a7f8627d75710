//! A6's `hedgingPolicy`, built in code or read from a service config.

use std::time::Duration;

use ::tonic::Code;

use super::attempts::MaxAttempts;
use super::codes::{Codes, check_no_ok};
use super::error::ServiceConfigError;
use super::json::{RawHedgingPolicy, optional, required};

/// A6's `hedgingPolicy`: up to `maxAttempts` copies of the call (capped at 5 unless the client
/// raises the cap), one more every `hedgingDelay` until one answers; a `nonFatalStatusCodes`
/// failure sends the next copy at once, any other failure ends the call.
///
/// ```
/// use std::time::Duration;
/// use reattempt::tonic::HedgingPolicy;
/// use tonic::Code;
///
/// let policy = HedgingPolicy::new(4, Duration::from_millis(500), &[Code::Unavailable, Code::Internal])?;
/// assert_eq!((policy.max_attempts(), policy.hedging_delay()), (4, Duration::from_millis(500)));
/// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HedgingPolicy {
    max_attempts: MaxAttempts,
    hedging_delay: Duration,
    non_fatal_status_codes: Codes,
}

impl HedgingPolicy {
    /// A hedging policy built in code, validated by A6's rules with the errors of a JSON config:
    /// `max_attempts` at least 2 (above 5 it counts as 5, as from JSON), `non_fatal_status_codes`
    /// without `Ok` (it may be empty). A zero `hedging_delay` sends every copy at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// let err = HedgingPolicy::new(1, Duration::ZERO, &[]).unwrap_err();
    /// assert_eq!(err.to_string(), "maxAttempts: must be at least 2");
    /// ```
    ///
    /// # Errors
    ///
    /// [`ServiceConfigError::Invalid`] naming the value that breaks a rule.
    pub fn new(
        max_attempts: u32,
        hedging_delay: Duration,
        non_fatal_status_codes: &[Code],
    ) -> Result<Self, ServiceConfigError> {
        HedgingPolicy::check(
            i128::from(max_attempts),
            hedging_delay,
            Codes::new(non_fatal_status_codes),
        )
    }

    /// The policy with another cap on `max_attempts` (A6's default is 5).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// let policy = HedgingPolicy::new(7, Duration::ZERO, &[])?;
    /// assert_eq!(policy.max_attempts(), 5);
    /// assert_eq!(policy.with_max_attempts_cap(7).max_attempts(), 7);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn with_max_attempts_cap(self, cap: u32) -> Self {
        HedgingPolicy {
            max_attempts: self.max_attempts.with_cap(cap),
            ..self
        }
    }

    /// The most copies a call sends, the first included: the configured `maxAttempts`, at most
    /// the cap (5 by default).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// assert_eq!(HedgingPolicy::new(3, Duration::ZERO, &[])?.max_attempts(), 3);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.get()
    }

    /// `hedgingDelay`: the wait before each further copy (0, the default: all at once).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// let policy = HedgingPolicy::new(3, Duration::from_millis(50), &[])?;
    /// assert_eq!(policy.hedging_delay(), Duration::from_millis(50));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn hedging_delay(&self) -> Duration {
        self.hedging_delay
    }

    /// `nonFatalStatusCodes`: failures after which the other copies carry on (empty by default:
    /// any failure ends the call).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    /// use tonic::Code;
    ///
    /// let policy = HedgingPolicy::new(3, Duration::ZERO, &[Code::Unavailable])?;
    /// assert!(policy.non_fatal_status_codes().contains(Code::Unavailable));
    /// assert!(!policy.non_fatal_status_codes().contains(Code::Internal));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn non_fatal_status_codes(&self) -> Codes {
        self.non_fatal_status_codes
    }

    fn check(
        max_attempts: i128,
        hedging_delay: Duration,
        non_fatal_status_codes: Codes,
    ) -> Result<Self, ServiceConfigError> {
        let max_attempts = MaxAttempts::check(max_attempts)?;
        check_no_ok(non_fatal_status_codes, "nonFatalStatusCodes")?;
        Ok(HedgingPolicy {
            max_attempts,
            hedging_delay,
            non_fatal_status_codes,
        })
    }

    pub(super) fn from_raw(raw: &RawHedgingPolicy) -> Result<Self, ServiceConfigError> {
        let max_attempts = required(raw.max_attempts.as_ref(), "maxAttempts")?;
        let hedging_delay = optional(raw.hedging_delay.as_ref(), "hedgingDelay")?
            .map(|d| d.non_negative().map_err(|e| e.at("hedgingDelay")))
            .transpose()?
            .unwrap_or(Duration::ZERO);
        let codes = optional(raw.non_fatal_status_codes.as_ref(), "nonFatalStatusCodes")?
            .unwrap_or_default();
        HedgingPolicy::check(max_attempts, hedging_delay, codes)
    }
}
