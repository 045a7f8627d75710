//! gRFC A6's retry throttle (see [`RetryThrottle`]).

use std::sync::Arc;

use crate::ConfigError;
use crate::sync::{AtomicU32, Ordering};

/// Tokens are counted in thousandths, as grpc-java's `RetriableStream.Throttle` counts them
/// (`THREE_DECIMAL_PLACES_SCALE_UP`): A6 keeps three decimal places of `tokenRatio`, and integer
/// arithmetic does not drift as repeated float additions would.
const SCALE: u32 = 1000;

/// A6's largest `maxTokens`.
const MAX_TOKENS: u32 = 1000;

/// [gRFC A6](https://github.com/grpc/proposal/blob/master/A6-client-retries.md)'s retry
/// throttle, `retryThrottling` in a gRPC service config: one per channel (per server name),
/// shared by every method called over it. A clone is the same throttle (an `Arc` inside).
///
/// - `token_count` starts at `max_tokens` and stays within `[0, max_tokens]`.
/// - Every failed attempt (its status is one of the policy's `retryableStatusCodes` or
///   `nonFatalStatusCodes`, or the server's pushback asked for no retry) takes 1 token:
///   [`record_failure`](Self::record_failure). Other failures (`INVALID_ARGUMENT`…) are not
///   counted.
/// - Every success adds `token_ratio`: [`record_success`](Self::record_success).
/// - Retries and hedged attempts start only while `token_count > max_tokens / 2`
///   ([`allows_retry`](Self::allows_retry)); the first attempt of a call is always sent.
///
/// Tokens are kept in thousandths (`token_ratio` keeps three decimal places, as A6 says: 0.5466
/// counts as 0.546), in one atomic updated by compare-and-swap: lock-free, no float drift.
///
/// ```
/// use reattempt::RetryThrottle;
///
/// // A6's example: `"retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }`.
/// let throttle = RetryThrottle::new(10, 0.1)?;
/// let per_channel = throttle.clone(); // the same tokens
/// for _ in 0..4 {
///     assert!(per_channel.record_failure(), "10 → 6 tokens: still above 5");
/// }
/// assert!(!throttle.record_failure(), "5 tokens: not above half, no more retries");
/// assert!(!throttle.allows_retry());
/// throttle.record_success(); // 5.1 tokens
/// assert!(throttle.allows_retry());
/// assert_eq!(throttle.tokens(), 5.1);
/// # Ok::<(), reattempt::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct RetryThrottle {
    inner: Arc<Inner>,
}

struct Inner {
    /// Thousandths of a token, in `[0, max]`.
    tokens: AtomicU32,
    /// `max_tokens`, in thousandths.
    max: u32,
    /// `max / 2`: retries need more than this.
    threshold: u32,
    /// `token_ratio`, in thousandths (at most `max`).
    ratio: u32,
}

impl RetryThrottle {
    /// A throttle with `max_tokens` tokens (A6: in (0, 1000]) that a success refills by
    /// `token_ratio` (A6: greater than 0; decimals beyond the third are dropped, so it must be at
    /// least 0.001; the ratio is first rounded to six decimals, so that 0.29, which an `f64` holds
    /// as 0.28999…, counts as 0.290). It starts full.
    ///
    /// ```
    /// use reattempt::RetryThrottle;
    ///
    /// let throttle = RetryThrottle::new(100, 0.5466)?;
    /// assert_eq!((throttle.max_tokens(), throttle.token_ratio()), (100, 0.546));
    /// assert_eq!(throttle.tokens(), 100.0);
    ///
    /// let err = RetryThrottle::new(1001, 0.1).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `max_tokens`: must be in (0, 1000]");
    /// assert_eq!(RetryThrottle::new(10, 0.0).unwrap_err().field(), "token_ratio");
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::OutOfRange`] for `max_tokens` 0 or above 1000, and for a `token_ratio`
    /// that is not a finite number of at least 0.001.
    pub fn new(max_tokens: u32, token_ratio: f64) -> Result<RetryThrottle, ConfigError> {
        if max_tokens == 0 || max_tokens > MAX_TOKENS {
            return Err(ConfigError::OutOfRange {
                field: "max_tokens",
                rule: MAX_TOKENS_RULE,
            });
        }
        let max = max_tokens * SCALE;
        let ratio = thousandths(token_ratio, max).ok_or(ConfigError::OutOfRange {
            field: "token_ratio",
            rule: TOKEN_RATIO_RULE,
        })?;
        Ok(RetryThrottle {
            inner: Arc::new(Inner {
                tokens: AtomicU32::new(max),
                max,
                threshold: max / 2,
                ratio,
            }),
        })
    }

    /// A new throttle with this one's settings, full (not sharing its tokens).
    #[cfg(feature = "tonic")]
    pub(crate) fn fresh(&self) -> RetryThrottle {
        let Inner {
            max,
            threshold,
            ratio,
            ..
        } = *self.inner;
        RetryThrottle {
            inner: Arc::new(Inner {
                tokens: AtomicU32::new(max),
                max,
                threshold,
                ratio,
            }),
        }
    }

    /// Records a failed attempt (a retryable or non-fatal status, or a pushback asking for no
    /// retry): one token less, never below 0. Returns whether a retry (or hedge) may still
    /// follow: whether the tokens left are above half of `max_tokens`.
    ///
    /// ```
    /// use reattempt::RetryThrottle;
    ///
    /// let throttle = RetryThrottle::new(3, 1.0)?;
    /// assert!(throttle.record_failure()); // 2 > 1.5
    /// assert!(!throttle.record_failure()); // 1
    /// assert!(!throttle.record_failure()); // 0
    /// assert!(!throttle.record_failure()); // still 0
    /// assert_eq!(throttle.tokens(), 0.0);
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    pub fn record_failure(&self) -> bool {
        let inner = &*self.inner;
        // grpc-java's `onQualifiedFailureThenCheckIsAboveThreshold`: at 0, nothing to take.
        match inner
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t != 0).then(|| t.saturating_sub(SCALE))
            }) {
            Ok(before) => before.saturating_sub(SCALE) > inner.threshold,
            Err(_) => false,
        }
    }

    /// Records a successful call: `token_ratio` more tokens, at most `max_tokens`.
    ///
    /// ```
    /// use reattempt::RetryThrottle;
    ///
    /// let throttle = RetryThrottle::new(2, 0.75)?;
    /// throttle.record_failure();
    /// throttle.record_success();
    /// assert_eq!(throttle.tokens(), 1.75);
    /// throttle.record_success();
    /// assert_eq!(throttle.tokens(), 2.0, "capped at max_tokens");
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    pub fn record_success(&self) {
        let inner = &*self.inner;
        let _ = inner
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t < inner.max).then(|| t.saturating_add(inner.ratio).min(inner.max))
            });
    }

    /// Whether retries and hedged attempts may start now: the tokens are above half of
    /// `max_tokens`. (A call's first attempt is always sent.)
    ///
    /// ```
    /// use reattempt::RetryThrottle;
    ///
    /// let throttle = RetryThrottle::new(2, 0.1)?;
    /// assert!(throttle.allows_retry());
    /// throttle.record_failure(); // 1 token: not above 1
    /// assert!(!throttle.allows_retry());
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    pub fn allows_retry(&self) -> bool {
        self.inner.tokens.load(Ordering::Relaxed) > self.inner.threshold
    }

    /// The tokens now, in `[0, max_tokens]` (three decimal places), for tests and metrics.
    ///
    /// ```
    /// let throttle = reattempt::RetryThrottle::new(10, 0.1)?;
    /// assert_eq!(throttle.tokens(), 10.0);
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    pub fn tokens(&self) -> f64 {
        f64::from(self.inner.tokens.load(Ordering::Relaxed)) / f64::from(SCALE)
    }

    /// `max_tokens`, as given.
    ///
    /// ```
    /// assert_eq!(reattempt::RetryThrottle::new(10, 0.1)?.max_tokens(), 10);
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    pub fn max_tokens(&self) -> u32 {
        self.inner.max / SCALE
    }

    /// `token_ratio` as counted: three decimal places, at most `max_tokens`.
    ///
    /// ```
    /// assert_eq!(reattempt::RetryThrottle::new(10, 0.1239)?.token_ratio(), 0.123);
    /// # Ok::<(), reattempt::ConfigError>(())
    /// ```
    pub fn token_ratio(&self) -> f64 {
        f64::from(self.inner.ratio) / f64::from(SCALE)
    }
}

impl std::fmt::Debug for RetryThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryThrottle")
            .field("tokens", &self.tokens())
            .field("max_tokens", &self.max_tokens())
            .field("token_ratio", &self.token_ratio())
            .finish()
    }
}

/// What `max_tokens` must be (after "must be").
pub(crate) const MAX_TOKENS_RULE: &str = "in (0, 1000]";

/// What `token_ratio` must be (after "must be").
pub(crate) const TOKEN_RATIO_RULE: &str = "a number of at least 0.001 (A6 keeps 3 decimal places)";

/// `ratio` in thousandths, decimals beyond the third dropped (A6: 0.5466 is 0.546), at most
/// `max` (a success never adds more than the bucket holds); `None` when that leaves nothing.
fn thousandths(ratio: f64, max: u32) -> Option<u32> {
    if !ratio.is_finite() || ratio <= 0.0 {
        return None;
    }
    if ratio >= f64::from(max) {
        return Some(max);
    }
    // Rounded to millionths first, so that 0.29 (0.28999…) counts as 0.290, not 0.289.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "0 < ratio < max ≤ 1000: at most 10⁹ millionths"
    )]
    let millionths = (ratio * 1e6).round() as u64;
    let milli = u32::try_from(millionths / 1000).unwrap_or(max).min(max);
    (milli > 0).then_some(milli)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn thousandths_drop_the_fourth_decimal() {
        let max = 10 * SCALE;
        assert_eq!(thousandths(0.5466, max), Some(546));
        assert_eq!(thousandths(0.29, max), Some(290));
        assert_eq!(thousandths(0.1, max), Some(100));
        assert_eq!(thousandths(0.001, max), Some(1));
        assert_eq!(thousandths(0.0009, max), None);
        assert_eq!(thousandths(0.0, max), None);
        assert_eq!(thousandths(-1.0, max), None);
        assert_eq!(thousandths(f64::NAN, max), None);
        assert_eq!(thousandths(f64::INFINITY, max), None);
        assert_eq!(thousandths(1e300, max), Some(max));
    }
}
