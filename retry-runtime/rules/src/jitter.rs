//! Randomising a delay so that clients that failed together do not retry together. (The draw
//! itself is the runtime's, which has the random generator.)

/// How a delay is randomised (Marc Brooker, "Exponential Backoff And Jitter", AWS, 2015).
///
/// `d` is the backoff's delay for this retry, already capped at `max_delay`.
///
/// | variant | sleep |
/// |---|---|
/// | `None` | `d` |
/// | `Full` (the default) | U[0, d] |
/// | `Equal` | d/2 + U[0, d/2] |
/// | `Decorrelated` | min(max_delay, U[delay, previous sleep × 3]), the first "previous" being `delay` |
/// | `Proportional(f)` | U[d(1−f), d(1+f)], f in (0, 1] (may exceed `max_delay` by up to f·d) |
///
/// ```
/// use std::time::Duration;
/// use reattempt::Jitter;
///
/// let d = Duration::from_millis(400);
/// assert_eq!(Jitter::None.to_string(), "none");
/// assert_eq!("equal".parse::<Jitter>(), Ok(Jitter::Equal));
/// assert_eq!("0.25".parse::<Jitter>(), Ok(Jitter::Proportional(0.25)));
/// # let _ = d;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Jitter {
    /// No randomness: sleep exactly the backoff's delay.
    None,
    /// Uniform over `[0, d]`.
    #[default]
    Full,
    /// Half fixed, half uniform: `d/2 + U[0, d/2]`.
    Equal,
    /// Each sleep uniform over `[delay, previous × 3]`, capped at `max_delay`; ignores the backoff.
    Decorrelated,
    /// Uniform over `[d(1−f), d(1+f)]`.
    Proportional(f64),
}

impl Jitter {
    /// Whether a factor is a valid `Proportional` factor: finite and in (0, 1].
    pub(crate) const fn factor_is_valid(f: f64) -> bool {
        f.is_finite() && f > 0.0 && f <= 1.0
    }
}

impl std::fmt::Display for Jitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Jitter::None => f.write_str("none"),
            Jitter::Full => f.write_str("full"),
            Jitter::Equal => f.write_str("equal"),
            Jitter::Decorrelated => f.write_str("decorrelated"),
            Jitter::Proportional(factor) => write!(f, "{factor}"),
        }
    }
}

/// The text was not a jitter kind: `"none"`, `"full"`, `"equal"`, `"decorrelated"` or a factor
/// in (0, 1].
///
/// ```
/// use reattempt::Jitter;
///
/// let err = "1.5".parse::<Jitter>().unwrap_err();
/// assert_eq!(err.input(), "1.5");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseJitterError {
    input: String,
}

impl ParseJitterError {
    /// The text that was not a jitter kind.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl std::fmt::Display for ParseJitterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown jitter `{}`: expected \"none\", \"full\", \"equal\", \"decorrelated\" or a factor in (0, 1]",
            self.input
        )
    }
}

impl std::error::Error for ParseJitterError {}

impl std::str::FromStr for Jitter {
    type Err = ParseJitterError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Jitter::None),
            "full" => Ok(Jitter::Full),
            "equal" => Ok(Jitter::Equal),
            "decorrelated" => Ok(Jitter::Decorrelated),
            other => match other.parse::<f64>() {
                Ok(f) if Jitter::factor_is_valid(f) => Ok(Jitter::Proportional(f)),
                _ => Err(ParseJitterError {
                    input: other.to_owned(),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("full".parse::<Jitter>(), Ok(Jitter::Full));
        assert_eq!("1".parse::<Jitter>(), Ok(Jitter::Proportional(1.0)));
        assert!("0".parse::<Jitter>().is_err());
        assert!("1.5".parse::<Jitter>().is_err());
        assert!("NaN".parse::<Jitter>().is_err());
        let err = "fulll".parse::<Jitter>().unwrap_err();
        assert!(err.to_string().contains("fulll"));
    }
}
