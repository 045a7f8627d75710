//! A retried stream's own settings (beside its schedule's) and the rules that hold them against
//! the schedule: what `#[retryable(resume = …)]` checks at compile time, and what a stream's
//! builder means by them.

use std::time::Duration;

use crate::PolicySettings;

/// The settings a retried stream has beside its policy's: each optional (absent: the default).
///
/// ```
/// use std::time::Duration;
/// use reattempt::runtime::{PolicySettings, StreamError, StreamSettings};
///
/// let stream = StreamSettings { idle_timeout: Some(Duration::from_secs(30)), ..StreamSettings::default() };
/// assert!(stream.check(&PolicySettings::default()).is_ok());
/// assert!(stream.progress_resets());
///
/// let zero = StreamSettings { idle_timeout: Some(Duration::ZERO), ..StreamSettings::default() };
/// assert_eq!(zero.check(&PolicySettings::default()), Err(StreamError::ZeroIdleTimeout));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamSettings {
    /// No item for this long fails the attempt, retried as a timeout is (> 0; default: none).
    pub idle_timeout: Option<Duration>,
    /// Whether a failure after items were delivered since the last failure starts the schedule
    /// again, its attempts and its backoff (default `true`).
    pub progress_resets: Option<bool>,
}

impl StreamSettings {
    /// `progress_resets`, or its default (`true`: a stream that made progress is healthy again,
    /// as kube-runtime's `watcher` resets its backoff on an event).
    ///
    /// ```
    /// use reattempt::runtime::StreamSettings;
    ///
    /// assert!(StreamSettings::default().progress_resets());
    /// let kept = StreamSettings { progress_resets: Some(false), ..StreamSettings::default() };
    /// assert!(!kept.progress_resets());
    /// ```
    pub const fn progress_resets(&self) -> bool {
        !matches!(self.progress_resets, Some(false))
    }

    /// Checks the stream's settings against its schedule's: the first rule broken.
    ///
    /// # Errors
    /// A [`StreamError`] naming the key at fault and the rule it breaks.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{HedgeAfter, runtime::{PolicySettings, StreamError, StreamSettings}};
    ///
    /// let hedged = PolicySettings {
    ///     hedge_after: Some(HedgeAfter::Fixed(Duration::from_millis(50))),
    ///     ..PolicySettings::default()
    /// };
    /// let err = StreamSettings::default().check(&hedged).unwrap_err();
    /// assert_eq!(err, StreamError::Hedged);
    /// assert_eq!(err.field(), "hedge_after");
    /// ```
    pub const fn check(&self, policy: &PolicySettings) -> Result<(), StreamError> {
        if policy.hedge_after.is_some() {
            return Err(StreamError::Hedged);
        }
        let Some(idle) = self.idle_timeout else {
            return Ok(());
        };
        if idle.is_zero() {
            return Err(StreamError::ZeroIdleTimeout);
        }
        if let Some(max_elapsed) = policy.max_elapsed
            && idle.as_nanos() >= max_elapsed.as_nanos()
        {
            return Err(StreamError::IdleTimeoutNotBelowMaxElapsed {
                idle_timeout: idle,
                max_elapsed,
            });
        }
        Ok(())
    }
}

/// A rule a stream's settings break ([`StreamSettings::check`]).
///
/// ```
/// use reattempt::runtime::StreamError;
///
/// assert_eq!(StreamError::ZeroIdleTimeout.field(), "idle_timeout");
/// assert!(StreamError::ZeroIdleTimeout.to_string().starts_with("invalid `idle_timeout`"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamError {
    /// `idle_timeout` is zero: every wait for an item would fail at once.
    ZeroIdleTimeout,
    /// `idle_timeout` is at least `max_elapsed`, which bounds the whole stream: the deadline
    /// always comes first, so the idle timeout never fires.
    IdleTimeoutNotBelowMaxElapsed {
        /// The stream's idle timeout.
        idle_timeout: Duration,
        /// The whole stream's deadline.
        max_elapsed: Duration,
    },
    /// `hedge_after` on a stream: two copies of a stream would each deliver its items, and
    /// which copy's items reach the consumer could change at every item.
    Hedged,
}

impl StreamError {
    /// The key at fault, where `#[retryable]` reports it.
    ///
    /// ```
    /// assert_eq!(reattempt::runtime::StreamError::Hedged.field(), "hedge_after");
    /// ```
    pub const fn field(&self) -> &'static str {
        match self {
            StreamError::ZeroIdleTimeout | StreamError::IdleTimeoutNotBelowMaxElapsed { .. } => {
                "idle_timeout"
            }
            StreamError::Hedged => "hedge_after",
        }
    }
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid `{}`: ", self.field())?;
        match self {
            StreamError::ZeroIdleTimeout => {
                f.write_str("must be longer than zero (every wait for an item would fail at once)")
            }
            StreamError::IdleTimeoutNotBelowMaxElapsed {
                idle_timeout,
                max_elapsed,
            } => write!(
                f,
                "must be shorter than `max_elapsed`, which bounds the whole stream, or it never \
                 fires: {idle_timeout:?} >= {max_elapsed:?}"
            ),
            StreamError::Hedged => f.write_str(
                "a stream cannot be hedged: two copies of it would each deliver its items, so an \
                 item could reach the consumer twice or be skipped",
            ),
        }
    }
}

impl std::error::Error for StreamError {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{StreamError, StreamSettings};
    use crate::{HedgeAfter, PolicySettings};

    fn idle(ms: u64) -> StreamSettings {
        StreamSettings {
            idle_timeout: Some(Duration::from_millis(ms)),
            ..StreamSettings::default()
        }
    }

    #[test]
    fn an_idle_timeout_must_come_before_the_whole_streams_deadline() {
        let deadline = PolicySettings {
            max_elapsed: Some(Duration::from_secs(1)),
            ..PolicySettings::default()
        };
        assert!(idle(999).check(&deadline).is_ok());
        let e = idle(1000).check(&deadline).unwrap_err();
        assert_eq!(e.field(), "idle_timeout");
        assert!(e.to_string().contains("1s >= 1s"), "{e}");
        assert_eq!(idle(0).check(&deadline), Err(StreamError::ZeroIdleTimeout));
        assert!(idle(60_000).check(&PolicySettings::default()).is_ok());
    }

    #[test]
    fn a_hedged_schedule_is_refused_whatever_the_stream_says() {
        let hedged = PolicySettings {
            hedge_after: Some(HedgeAfter::Fixed(Duration::from_millis(5))),
            ..PolicySettings::default()
        };
        assert_eq!(
            StreamSettings::default().check(&hedged),
            Err(StreamError::Hedged)
        );
        assert_eq!(idle(0).check(&hedged), Err(StreamError::Hedged));
    }
}
