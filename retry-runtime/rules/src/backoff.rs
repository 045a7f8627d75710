//! How the un-jittered delay grows from one retry to the next.

use std::time::Duration;

/// How the delay before each retry grows, before jitter and before the `max_delay` ceiling.
///
/// `n` below is the retry number: 1 for the sleep after the first failed attempt.
///
/// ```
/// use std::time::Duration;
/// use reattempt::Backoff;
///
/// let d = Duration::from_millis(100);
/// let cap = Duration::from_secs(20);
/// assert_eq!(Backoff::Fixed.delay(3, d, 2.0, cap), d);
/// assert_eq!(Backoff::Linear.delay(3, d, 2.0, cap), Duration::from_millis(300));
/// assert_eq!(Backoff::Exponential.delay(3, d, 2.0, cap), Duration::from_millis(400));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backoff {
    /// `delay` before every retry.
    Fixed,
    /// `delay × n` before retry `n`.
    Linear,
    /// `delay × multiplier^(n−1)` before retry `n` (the default).
    #[default]
    Exponential,
}

impl Backoff {
    /// The delay before retry `n` (1-based), capped at `max_delay`.
    ///
    /// The arithmetic saturates: retry 10⁹ with multiplier 10⁶ gives `max_delay`, never a panic.
    /// Results are exact to the nanosecond for the usual values (`200ms × 2³ = 1600ms`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::Backoff;
    ///
    /// let cap = Duration::from_secs(2);
    /// let d = Backoff::Exponential.delay(1_000_000_000, Duration::from_millis(200), 1e6, cap);
    /// assert_eq!(d, cap);
    /// ```
    #[must_use]
    pub fn delay(self, n: u32, delay: Duration, multiplier: f64, max_delay: Duration) -> Duration {
        let base = nanos(delay);
        let cap = nanos(max_delay);
        let raw = match self {
            Backoff::Fixed => base,
            Backoff::Linear => base.saturating_mul(u64::from(n.max(1))),
            Backoff::Exponential => {
                let exponent = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
                scale(base, multiplier.powi(exponent), cap)
            }
        };
        Duration::from_nanos(raw.min(cap))
    }
}

impl std::fmt::Display for Backoff {
    /// The name used in the attribute and in config: `fixed`, `linear` or `exponential`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backoff::Fixed => "fixed",
            Backoff::Linear => "linear",
            Backoff::Exponential => "exponential",
        })
    }
}

/// The text was not a backoff kind: `"fixed"`, `"linear"` or `"exponential"`.
///
/// ```
/// use reattempt::Backoff;
///
/// let err = "quadratic".parse::<Backoff>().unwrap_err();
/// assert_eq!(err.input(), "quadratic");
/// assert!(err.to_string().contains("expected \"fixed\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseBackoffError {
    input: String,
}

impl ParseBackoffError {
    /// The text that was not a backoff kind.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl std::fmt::Display for ParseBackoffError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown backoff `{}`: expected \"fixed\", \"linear\" or \"exponential\"",
            self.input
        )
    }
}

impl std::error::Error for ParseBackoffError {}

impl std::str::FromStr for Backoff {
    type Err = ParseBackoffError;

    /// Parses `"fixed"`, `"linear"` or `"exponential"`.
    ///
    /// ```
    /// # use reattempt::Backoff;
    /// assert_eq!("linear".parse::<Backoff>(), Ok(Backoff::Linear));
    /// assert!("quadratic".parse::<Backoff>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, ParseBackoffError> {
        match s {
            "fixed" => Ok(Backoff::Fixed),
            "linear" => Ok(Backoff::Linear),
            "exponential" => Ok(Backoff::Exponential),
            other => Err(ParseBackoffError {
                input: other.to_owned(),
            }),
        }
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (about 584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `base × factor`, rounded to the nanosecond, or `cap` when the product reaches it (or is not a
/// number at all, which only an infinite factor times zero can give).
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the product is checked to lie in [0, cap] before the cast back"
)]
pub fn scale(base: u64, factor: f64, cap: u64) -> u64 {
    let product = base as f64 * factor;
    if product.is_nan() || product >= cap as f64 {
        cap
    } else {
        (product.round() as u64).min(cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn fixed_is_constant() {
        for n in [1, 2, 10, u32::MAX] {
            assert_eq!(
                Backoff::Fixed.delay(n, 250 * MS, 2.0, 20_000 * MS),
                250 * MS
            );
        }
    }

    #[test]
    fn linear_grows_by_delay() {
        let got: Vec<_> = (1..=4)
            .map(|n| Backoff::Linear.delay(n, 100 * MS, 2.0, 20_000 * MS))
            .collect();
        assert_eq!(got, [100 * MS, 200 * MS, 300 * MS, 400 * MS]);
    }

    #[test]
    fn exponential_doubles_then_caps() {
        let got: Vec<_> = (1..=6)
            .map(|n| Backoff::Exponential.delay(n, 200 * MS, 2.0, 2_000 * MS))
            .collect();
        assert_eq!(
            got,
            [
                200 * MS,
                400 * MS,
                800 * MS,
                1600 * MS,
                2000 * MS,
                2000 * MS
            ]
        );
    }

    #[test]
    fn fractional_multiplier_is_exact_to_the_nanosecond() {
        let d = Backoff::Exponential.delay(3, 100 * MS, 1.5, 20_000 * MS);
        assert_eq!(d, Duration::from_millis(225));
    }

    #[test]
    fn extreme_values_saturate() {
        let cap = Duration::from_secs(3600 * 24 * 365 * 100);
        assert_eq!(Backoff::Exponential.delay(1_000_000_000, MS, 1e6, cap), cap);
        assert_eq!(Backoff::Linear.delay(u32::MAX, cap, 2.0, cap), cap);
        assert_eq!(
            Backoff::Exponential.delay(u32::MAX, Duration::MAX, f64::MAX, Duration::MAX),
            Duration::from_nanos(u64::MAX)
        );
        assert_eq!(
            Backoff::Exponential.delay(u32::MAX, 5 * MS, 1.0, 2_000 * MS),
            5 * MS
        );
    }
}
