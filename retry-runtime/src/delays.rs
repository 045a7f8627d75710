//! The sequence of sleeps of one logical call.

use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::policy::RetryPolicy;
use crate::rng::with_jitter_rng;

/// Where one call is in its schedule: its previous sleep (decorrelated jitter grows from it),
/// in microseconds so that it packs beside the engine's attempt counter; it saturates at 71
/// minutes, which only narrows decorrelated jitter's range for longer sleeps. The retry number is
/// the caller's (the engine's attempt count), so it is not stored twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Schedule {
    previous_us: u32,
}

impl Schedule {
    /// The sleep before retry `n` (1-based), drawn from `rng`.
    pub(crate) fn next_with<R: Rng + ?Sized>(
        &mut self,
        n: u32,
        policy: &RetryPolicy,
        rng: &mut R,
    ) -> Duration {
        let previous = if n <= 1 {
            policy.delay
        } else {
            Duration::from_micros(u64::from(self.previous_us))
        };
        let d = policy
            .backoff
            .delay(n, policy.delay, policy.multiplier, policy.max_delay);
        let sleep = policy
            .jitter
            .apply(d, previous, policy.delay, policy.max_delay, rng);
        self.previous_us = u32::try_from(sleep.as_micros()).unwrap_or(u32::MAX);
        sleep
    }

    /// The sleep before retry `n`, from this thread's generator; draws nothing without jitter.
    pub(crate) fn next(&mut self, n: u32, policy: &RetryPolicy) -> Duration {
        if matches!(policy.jitter, crate::Jitter::None) {
            // No randomness needed: skip the thread-local access.
            self.next_with(n, policy, &mut NoRandomness)
        } else {
            with_jitter_rng(|rng| self.next_with(n, policy, rng))
        }
    }
}

/// A generator for `Jitter::None`, which never draws.
struct NoRandomness;

impl rand::TryRng for NoRandomness {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(0)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(0)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        dst.fill(0);
        Ok(())
    }
}

/// The sleeps between the attempts of one logical call: `max_attempts − 1` of them, in order.
/// Made by [`RetryPolicy::delays`] and [`RetryPolicy::delays_seeded`].
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{Jitter, RetryPolicy};
///
/// let policy = RetryPolicy::builder().max_attempts(4).jitter(Jitter::None).build().unwrap();
/// let sleeps: Vec<Duration> = policy.delays().collect();
/// assert_eq!(sleeps, [100, 200, 400].map(Duration::from_millis));
/// ```
#[derive(Debug, Clone)]
pub struct Delays<'p> {
    policy: &'p RetryPolicy,
    retries: u32,
    schedule: Schedule,
    rng: Option<SmallRng>,
}

impl<'p> Delays<'p> {
    pub(crate) fn new(policy: &'p RetryPolicy, seed: Option<u64>) -> Self {
        Delays {
            policy,
            retries: 0,
            schedule: Schedule::default(),
            rng: seed.map(SmallRng::seed_from_u64),
        }
    }
}

impl Iterator for Delays<'_> {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.retries >= self.policy.max_attempts - 1 {
            return None;
        }
        self.retries += 1;
        Some(match &mut self.rng {
            Some(rng) => self.schedule.next_with(self.retries, self.policy, rng),
            None => self.schedule.next(self.retries, self.policy),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.policy.max_attempts - 1 - self.retries) as usize;
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backoff, Jitter};

    const MS: Duration = Duration::from_millis(1);

    fn policy(b: crate::RetryPolicyBuilder) -> RetryPolicy {
        b.build().unwrap()
    }

    #[test]
    fn exponential_without_jitter_is_exact() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(6)
                .delay(200 * MS)
                .max_delay(2000 * MS)
                .jitter(Jitter::None),
        );
        let got: Vec<_> = p.delays().collect();
        assert_eq!(got, [200 * MS, 400 * MS, 800 * MS, 1600 * MS, 2000 * MS]);
    }

    #[test]
    fn fixed_and_linear_without_jitter() {
        let fixed = policy(
            RetryPolicy::builder()
                .max_attempts(4)
                .backoff(Backoff::Fixed)
                .delay(50 * MS)
                .jitter(Jitter::None),
        );
        assert_eq!(fixed.delays().collect::<Vec<_>>(), [50 * MS; 3]);
        let linear = policy(
            RetryPolicy::builder()
                .max_attempts(4)
                .backoff(Backoff::Linear)
                .delay(50 * MS)
                .jitter(Jitter::None),
        );
        assert_eq!(
            linear.delays().collect::<Vec<_>>(),
            [50 * MS, 100 * MS, 150 * MS]
        );
    }

    #[test]
    fn one_attempt_has_no_sleeps() {
        let p = policy(RetryPolicy::builder().max_attempts(1));
        assert_eq!(p.delays().count(), 0);
        assert_eq!(p.delays().size_hint(), (0, Some(0)));
    }

    #[test]
    fn decorrelated_depends_on_the_previous_sleep() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(50)
                .delay(10 * MS)
                .max_delay(1000 * MS)
                .jitter(Jitter::Decorrelated),
        );
        let sleeps: Vec<_> = p.delays_seeded(5).collect();
        let mut previous = 10 * MS;
        for s in &sleeps {
            assert!(*s >= 10 * MS && *s <= (previous * 3).min(1000 * MS));
            previous = *s;
        }
        assert!(sleeps.iter().any(|s| *s > 30 * MS), "it grows: {sleeps:?}");
    }

    #[test]
    fn seeding_reproduces_a_schedule() {
        let p = policy(RetryPolicy::builder().max_attempts(10));
        assert!(p.delays_seeded(1).eq(p.delays_seeded(1)));
        assert!(!p.delays_seeded(1).eq(p.delays_seeded(2)));
        crate::seed_rng(11);
        let a: Vec<_> = p.delays().collect();
        crate::seed_rng(11);
        let b: Vec<_> = p.delays().collect();
        assert_eq!(a, b);
    }
}
