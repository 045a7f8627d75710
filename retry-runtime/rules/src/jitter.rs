//! Randomising a delay so that clients that failed together do not retry together.

#[cfg(feature = "rand")]
use std::time::Duration;

#[cfg(feature = "rand")]
use rand::{Rng, RngExt};

#[cfg(feature = "rand")]
use crate::backoff::{nanos, scale};

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
/// use retry_rules::Jitter;
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
    /// The sleep for one retry (feature `rand`, which retry-runtime turns on).
    ///
    /// `d` is the backoff's capped delay, `previous` the previous sleep of this call (`delay` before
    /// the first), `delay` and `max_delay` the policy's. Never panics; saturates at `u64::MAX` ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use rand::{SeedableRng, rngs::SmallRng};
    /// use retry_rules::Jitter;
    ///
    /// let ms = Duration::from_millis;
    /// let mut rng = SmallRng::seed_from_u64(7);
    /// let s = Jitter::Equal.apply(ms(400), ms(100), ms(100), ms(2000), &mut rng);
    /// assert!(s >= ms(200) && s <= ms(400));
    /// ```
    #[cfg(feature = "rand")]
    pub fn apply<R: Rng + ?Sized>(
        self,
        d: Duration,
        previous: Duration,
        delay: Duration,
        max_delay: Duration,
        rng: &mut R,
    ) -> Duration {
        let d_ns = nanos(d);
        let ns = match self {
            Jitter::None => d_ns,
            Jitter::Full => rng.random_range(0..=d_ns),
            Jitter::Equal => {
                let half = d_ns / 2;
                half + rng.random_range(0..=d_ns - half)
            }
            Jitter::Decorrelated => {
                let low = nanos(delay);
                let high = nanos(previous).saturating_mul(3).max(low);
                rng.random_range(low..=high).min(nanos(max_delay))
            }
            Jitter::Proportional(f) => {
                let low = scale(d_ns, 1.0 - f, u64::MAX);
                let high = scale(d_ns, 1.0 + f, u64::MAX).max(low);
                rng.random_range(low..=high)
            }
        };
        Duration::from_nanos(ns)
    }

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
/// use retry_rules::Jitter;
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

/// `Jitter::apply`'s tests (feature `rand`: `cargo test --workspace` turns it on through
/// retry-runtime).
#[cfg(all(test, feature = "rand"))]
mod apply_tests {
    use super::*;
    use rand::{SeedableRng, rngs::SmallRng};

    const MS: Duration = Duration::from_millis(1);

    fn mean_ms(jitter: Jitter, d: Duration) -> f64 {
        let mut rng = SmallRng::seed_from_u64(42);
        let n = 10_000;
        let total: f64 = (0..n)
            .map(|_| {
                jitter
                    .apply(d, 100 * MS, 100 * MS, 20_000 * MS, &mut rng)
                    .as_secs_f64()
            })
            .sum();
        total / f64::from(n) * 1000.0
    }

    #[test]
    fn full_jitter_mean_is_half_the_delay() {
        let mean = mean_ms(Jitter::Full, 1000 * MS);
        assert!((mean - 500.0).abs() < 15.0, "mean {mean} ms");
    }

    #[test]
    fn equal_jitter_mean_is_three_quarters_of_the_delay() {
        let mean = mean_ms(Jitter::Equal, 1000 * MS);
        assert!((mean - 750.0).abs() < 22.5, "mean {mean} ms");
    }

    #[test]
    fn none_is_exact_and_bounds_hold() {
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..1000 {
            assert_eq!(
                Jitter::None.apply(300 * MS, MS, MS, 1000 * MS, &mut rng),
                300 * MS
            );
            let full = Jitter::Full.apply(300 * MS, MS, MS, 1000 * MS, &mut rng);
            assert!(full <= 300 * MS);
            let equal = Jitter::Equal.apply(301 * MS, MS, MS, 1000 * MS, &mut rng);
            assert!(equal >= Duration::from_micros(150_500) && equal <= 301 * MS);
            let p = Jitter::Proportional(0.2).apply(100 * MS, MS, MS, 1000 * MS, &mut rng);
            assert!(p >= 80 * MS && p <= 120 * MS, "{p:?}");
        }
    }

    #[test]
    fn decorrelated_stays_between_base_and_three_times_previous_and_under_cap() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut prev = 100 * MS;
        for _ in 0..1000 {
            let s = Jitter::Decorrelated.apply(prev, prev, 100 * MS, 2000 * MS, &mut rng);
            assert!(
                s >= 100 * MS && s <= (prev * 3).min(2000 * MS),
                "{s:?} {prev:?}"
            );
            prev = s;
        }
    }
}
