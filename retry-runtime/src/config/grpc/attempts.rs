//! What A6's two policies share: `maxAttempts`, its rule, and the client's cap on it.

use super::error::{ServiceConfigError, invalid};

// One constant for the config's policies and the gRPC layer (which re-exports it).
/// A6's default cap on `maxAttempts`: a service config asking for more gets 5, unless the
/// client raises the cap ([`GrpcRetryLayer::max_attempts_cap`]).
///
/// ```
/// use std::time::Duration;
/// use reattempt::tonic::{DEFAULT_MAX_ATTEMPTS_CAP, HedgingPolicy};
///
/// let policy = HedgingPolicy::new(9, Duration::ZERO, &[])?;
/// assert_eq!(policy.max_attempts(), DEFAULT_MAX_ATTEMPTS_CAP);
/// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
/// ```
///
/// [`GrpcRetryLayer::max_attempts_cap`]: crate::tonic::GrpcRetryLayer::max_attempts_cap
pub const DEFAULT_MAX_ATTEMPTS_CAP: u32 = 5;

/// A policy's `maxAttempts` as configured, with the cap it is read under: one piece of code for
/// the retry and the hedging policy, whose attempts A6 caps alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MaxAttempts {
    /// As configured.
    configured: u32,
    /// The client's cap.
    cap: u32,
}

impl MaxAttempts {
    /// A6: `maxAttempts` is at least 2; a larger one than the cap is clamped when read, not
    /// refused. The cap starts at A6's default.
    pub(super) fn check(n: i128) -> Result<MaxAttempts, ServiceConfigError> {
        if n < 2 {
            return Err(invalid("maxAttempts", "must be at least 2"));
        }
        Ok(MaxAttempts {
            configured: u32::try_from(n).unwrap_or(u32::MAX),
            cap: DEFAULT_MAX_ATTEMPTS_CAP,
        })
    }

    /// The same `maxAttempts` under another cap.
    pub(super) fn with_cap(self, cap: u32) -> MaxAttempts {
        MaxAttempts { cap, ..self }
    }

    /// The configured value, at most the cap (a cap of 0 counts as 1: the first attempt is
    /// always made).
    pub(super) fn get(self) -> u32 {
        self.configured.min(self.cap.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_attempts_is_at_least_2_and_read_under_its_cap() {
        assert_eq!(
            MaxAttempts::check(1).unwrap_err().to_string(),
            "maxAttempts: must be at least 2"
        );
        let n = MaxAttempts::check(7).unwrap();
        assert_eq!(n.get(), DEFAULT_MAX_ATTEMPTS_CAP);
        assert_eq!(n.with_cap(10).get(), 7);
        assert_eq!(n.with_cap(3).get(), 3);
        assert_eq!(n.with_cap(0).get(), 1);
        let huge = MaxAttempts::check(i128::MAX).unwrap();
        assert_eq!(huge.with_cap(u32::MAX).get(), u32::MAX);
    }
}
