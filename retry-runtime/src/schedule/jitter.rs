//! Drawing a jittered delay: [`SampleJitter::apply`], the random half of [`Jitter`] (its rules
//! and parsing are retry-rules', which has no random generator, so that the proc macro's host
//! build compiles no `rand`).

use std::time::Duration;

use rand::{Rng, RngExt};
use retry_rules::__private::{nanos, scale};

use crate::Jitter;

/// Draws the sleep of one retry from a [`Jitter`]: the runtime's delays use it, and so can a
/// simulation of a schedule.
pub trait SampleJitter {
    /// The sleep for one retry.
    ///
    /// `d` is the backoff's capped delay, `previous` the previous sleep of this call (`delay`
    /// before the first), `delay` and `max_delay` the policy's. Never panics; saturates at
    /// `u64::MAX` ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use rand::{SeedableRng, rngs::SmallRng};
    /// use reattempt::{Jitter, SampleJitter};
    ///
    /// let ms = Duration::from_millis;
    /// let mut rng = SmallRng::seed_from_u64(7);
    /// let s = Jitter::Equal.apply(ms(400), ms(100), ms(100), ms(2000), &mut rng);
    /// assert!(s >= ms(200) && s <= ms(400));
    /// ```
    fn apply<R: Rng + ?Sized>(
        self,
        d: Duration,
        previous: Duration,
        delay: Duration,
        max_delay: Duration,
        rng: &mut R,
    ) -> Duration;
}

impl SampleJitter for Jitter {
    fn apply<R: Rng + ?Sized>(
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
}

#[cfg(test)]
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
