//! Hedging: when a call's attempt has not answered within a delay, the next attempt starts
//! alongside it. [`HedgeAfter`] says what the delay is: fixed, or a quantile of the function's
//! recent attempt latencies, which the runtime's `Latencies` (a small lock-free streaming
//! histogram) estimates.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::duration::{ParseDurationError, parse_duration};

/// When a call hedges: the delay after an attempt starts past which, if no attempt has answered,
/// the next attempt starts alongside the ones in flight (see
/// `RetryPolicyBuilder::hedge_after`).
///
/// Written in the attribute and in config files as a duration (`"50ms"`) or a quantile
/// (`"p95"`, `"p99.9"`):
///
/// ```
/// use std::time::Duration;
/// use reattempt::HedgeAfter;
///
/// assert_eq!("50ms".parse::<HedgeAfter>().unwrap(), HedgeAfter::Fixed(Duration::from_millis(50)));
/// assert_eq!("p95".parse::<HedgeAfter>().unwrap(), HedgeAfter::quantile(95.0));
/// assert!("p100".parse::<HedgeAfter>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HedgeAfter {
    /// Always this delay.
    Fixed(Duration),
    /// This percentile (in (0, 100)) of the function's recent attempt latencies, so that about
    /// `100 − percentile` % of calls hedge whatever the dependency's speed; never below `floor`,
    /// and `start` until enough latencies were seen (the estimate is `None`: see
    /// [`Quantiles::quantile`]).
    Quantile {
        /// The percentile, in (0, 100): 95 for `"p95"`.
        percentile: f64,
        /// The shortest delay the estimate may give.
        floor: Duration,
        /// The delay before enough latencies were seen.
        start: Duration,
    },
}

impl HedgeAfter {
    /// The default floor of a quantile delay: 1 ms.
    pub const DEFAULT_FLOOR: Duration = Duration::from_millis(1);
    /// The default delay of a quantile before enough latencies were seen: 100 ms.
    pub const DEFAULT_START: Duration = Duration::from_millis(100);

    /// The `percentile`-th percentile of recent latencies, with the default floor and start.
    ///
    /// ```
    /// use reattempt::HedgeAfter;
    /// assert!(matches!(HedgeAfter::quantile(99.0), HedgeAfter::Quantile { percentile, .. } if percentile == 99.0));
    /// ```
    pub const fn quantile(percentile: f64) -> Self {
        HedgeAfter::Quantile {
            percentile,
            floor: Self::DEFAULT_FLOOR,
            start: Self::DEFAULT_START,
        }
    }

    /// The delay now: the fixed delay, or the estimate of the quantile from `latencies` (the
    /// runtime's `Latencies`, which every policy holds).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{HedgeAfter, runtime::Quantiles};
    ///
    /// /// Latencies of 10 ms, once there are enough of them.
    /// struct Seen(bool);
    /// impl Quantiles for Seen {
    ///     fn quantile(&self, _q: f64) -> Option<Duration> {
    ///         self.0.then_some(Duration::from_millis(10))
    ///     }
    /// }
    ///
    /// let p95 = HedgeAfter::quantile(95.0);
    /// assert_eq!(p95.delay(&Seen(false)), HedgeAfter::DEFAULT_START, "nothing seen yet");
    /// assert_eq!(p95.delay(&Seen(true)), Duration::from_millis(10));
    /// let fixed = HedgeAfter::Fixed(Duration::from_millis(50));
    /// assert_eq!(fixed.delay(&Seen(true)), Duration::from_millis(50));
    /// ```
    pub fn delay<L: Quantiles + ?Sized>(&self, latencies: &L) -> Duration {
        match *self {
            HedgeAfter::Fixed(d) => d,
            HedgeAfter::Quantile {
                percentile,
                floor,
                start,
            } => latencies
                .quantile(percentile / 100.0)
                .map_or(start, |q| q.max(floor)),
        }
    }
}

impl fmt::Display for HedgeAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HedgeAfter::Fixed(d) => write!(f, "{d:?}"),
            HedgeAfter::Quantile { percentile, .. } => write!(f, "p{percentile}"),
        }
    }
}

/// A `hedge_after` that is neither a duration nor a quantile `pNN` with NN in (0, 100).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseHedgeAfterError {
    /// Not a valid duration (and not starting with `p`).
    Duration(ParseDurationError),
    /// `p` followed by something other than a number in (0, 100).
    Quantile(String),
}

impl fmt::Display for ParseHedgeAfterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseHedgeAfterError::Duration(e) => write!(f, "{e}"),
            ParseHedgeAfterError::Quantile(s) => write!(
                f,
                "`{s}` is not a quantile: write `p` and a percentile above 0 and below 100, as \"p95\" or \"p99.9\""
            ),
        }
    }
}

impl std::error::Error for ParseHedgeAfterError {}

impl FromStr for HedgeAfter {
    type Err = ParseHedgeAfterError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Some(n) = t.strip_prefix('p') {
            match n.parse::<f64>() {
                Ok(p)
                    if p > 0.0
                        && p < 100.0
                        && n.chars().all(|c| c.is_ascii_digit() || c == '.') =>
                {
                    Ok(HedgeAfter::quantile(p))
                }
                _ => Err(ParseHedgeAfterError::Quantile(t.to_owned())),
            }
        } else {
            parse_duration(t)
                .map(HedgeAfter::Fixed)
                .map_err(ParseHedgeAfterError::Duration)
        }
    }
}

/// A source of latency quantiles for [`HedgeAfter::delay`]: the runtime's `Latencies` (a
/// streaming estimate of a function's recent attempt latencies) is one.
pub trait Quantiles {
    /// The estimated `q`-quantile (`q` in (0, 1)) of the recent latencies, or `None` while too
    /// few were seen for an estimate.
    fn quantile(&self, q: f64) -> Option<Duration>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_and_quantiles() {
        assert_eq!(
            "p99.9".parse::<HedgeAfter>().unwrap(),
            HedgeAfter::quantile(99.9)
        );
        assert_eq!(
            " 2s ".parse::<HedgeAfter>().unwrap(),
            HedgeAfter::Fixed(Duration::from_secs(2))
        );
        for bad in ["p0", "p100", "p-5", "pabc", "p", "p1e1", "fast"] {
            assert!(bad.parse::<HedgeAfter>().is_err(), "{bad}");
        }
        let e = "p100".parse::<HedgeAfter>().unwrap_err().to_string();
        assert!(e.contains("below 100"), "{e}");
    }
}
