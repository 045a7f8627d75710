//! The sequence of sleeps of one logical call.

use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::schedule::jitter::SampleJitter as _;

use crate::schedule::policy::RetryPolicy;
use crate::schedule::rng::with_jitter_rng;

/// Where one call is in its schedule: its previous sleep (decorrelated jitter grows from it).
///
/// It is kept in 4 bytes, so that it packs beside the engine's attempt counter: the sleep's 26
/// leading significant bits and a shift (see [`pack`]). That is exact below 67 ms and within
/// 1.5 × 10⁻⁸ of the sleep above (a few µs per hour), rounded down, so the next sleep's range
/// [delay, 3 × previous] is never wider than the formula's, at any scale from 1 ns to 584 years.
/// The retry number is the caller's (the engine's attempt count), so it is not stored twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Schedule {
    previous: u32,
}

/// Significant bits of the previous sleep that a [`Schedule`] keeps.
const KEPT_BITS: u32 = 26;

/// A number of nanoseconds in 32 bits: its `KEPT_BITS` leading significant bits, then (in the low
/// 6 bits) how far they are shifted. Rounds down.
pub(crate) fn pack(ns: u64) -> u32 {
    let shift = (u64::BITS - ns.leading_zeros()).saturating_sub(KEPT_BITS);
    let mantissa = u32::try_from(ns >> shift).unwrap_or(u32::MAX >> (u32::BITS - KEPT_BITS));
    (mantissa << 6) | shift
}

/// The nanoseconds that [`pack`] kept.
pub(crate) fn unpack(packed: u32) -> u64 {
    u64::from(packed >> 6) << (packed & 63)
}

impl Schedule {
    /// The sleep before retry `n` (1-based), drawn from `rng`, growing from `base` (the policy's
    /// `delay`, or its `throttling_delay` after a throttling error).
    pub(crate) fn next_with<R: Rng + ?Sized>(
        &mut self,
        n: u32,
        policy: &RetryPolicy,
        base: Duration,
        rng: &mut R,
    ) -> Duration {
        let previous = if n <= 1 {
            base
        } else {
            Duration::from_nanos(unpack(self.previous))
        };
        let d = policy
            .backoff
            .delay(n, base, policy.multiplier, policy.max_delay);
        let sleep = policy
            .jitter
            .apply(d, previous, base, policy.max_delay, rng);
        self.previous = pack(retry_rules::__private::nanos(sleep));
        sleep
    }

    /// The sleep before retry `n` growing from `base`, from this thread's generator; draws
    /// nothing without jitter.
    pub(crate) fn next(&mut self, n: u32, policy: &RetryPolicy, base: Duration) -> Duration {
        if matches!(policy.jitter, crate::Jitter::None) {
            // No randomness needed: skip the thread-local access.
            self.next_with(n, policy, base, &mut NoRandomness)
        } else {
            with_jitter_rng(|rng| self.next_with(n, policy, base, rng))
        }
    }
}

// The policy's sleeps, here with the iterator that gives them: the policy is the data they are
// computed from, and knows nothing of them.
impl RetryPolicy {
    /// The sleeps between the attempts of one logical call, in order: `max_attempts − 1` of them,
    /// jittered with this thread's generator (see [`seed_rng`](crate::seed_rng)).
    ///
    /// Decorrelated jitter is stateful: each sleep depends on the previous one, so take one
    /// iterator per logical call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::RetryPolicy;
    /// let p = RetryPolicy::builder().max_attempts(4).build().unwrap();
    /// let sleeps: Vec<Duration> = p.delays().collect();
    /// assert_eq!(sleeps.len(), 3);
    /// assert!(sleeps.iter().all(|d| *d <= Duration::from_millis(400)));
    /// ```
    pub fn delays(&self) -> Delays<'_> {
        Delays::new(self, None)
    }

    /// As [`delays`](Self::delays), drawing from a generator seeded with `seed`: the same seed
    /// gives the same schedule.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// let p = RetryPolicy::builder().max_attempts(6).build().unwrap();
    /// assert!(p.delays_seeded(9).eq(p.delays_seeded(9)));
    /// ```
    pub fn delays_seeded(&self, seed: u64) -> Delays<'_> {
        Delays::new(self, Some(seed))
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
/// use reattempt::{Jitter, RetryPolicy};
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
            Some(rng) => self
                .schedule
                .next_with(self.retries, self.policy, self.policy.delay, rng),
            None => self
                .schedule
                .next(self.retries, self.policy, self.policy.delay),
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

    /// Draws the top of every range: decorrelated jitter then sleeps min(cap, 3 × previous).
    struct Highest;

    impl rand::TryRng for Highest {
        type Error = std::convert::Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
            Ok(u32::MAX)
        }
        fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
            Ok(u64::MAX)
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
            dst.fill(0xff);
            Ok(())
        }
    }

    fn decorrelated(delay: Duration, max_delay: Duration) -> RetryPolicy {
        policy(
            RetryPolicy::builder()
                .max_attempts(RetryPolicy::MAX_ATTEMPTS)
                .delay(delay)
                .max_delay(max_delay)
                .jitter(Jitter::Decorrelated),
        )
    }

    /// The sleeps drawn at the top of every range.
    fn highest(p: &RetryPolicy, n: usize) -> Vec<Duration> {
        let mut schedule = Schedule::default();
        (1..=n)
            .map(|i| schedule.next_with(u32::try_from(i).unwrap(), p, p.delay, &mut Highest))
            .collect()
    }

    #[test]
    fn decorrelated_grows_from_a_sub_microsecond_delay() {
        let p = decorrelated(Duration::from_nanos(1), Duration::from_secs(1));
        let ns: Vec<u128> = highest(&p, 5).iter().map(Duration::as_nanos).collect();
        assert_eq!(ns, [3, 9, 27, 81, 243]);
    }

    #[test]
    fn decorrelated_grows_past_71_minutes() {
        let hour = Duration::from_secs(3600);
        let p = decorrelated(hour, Duration::MAX);
        let sleeps = highest(&p, 4);
        assert_eq!(sleeps[0], 3 * hour);
        for pair in sleeps.windows(2) {
            // 3 × the previous sleep, to 26 significant bits (a few µs at these scales).
            let (prev, next) = (pair[0].as_nanos(), pair[1].as_nanos());
            assert!(
                next <= 3 * prev && next >= 3 * prev - ((3 * prev) >> 25),
                "{sleeps:?}"
            );
        }
        assert!(sleeps[3] > 80 * hour, "{sleeps:?}");
    }

    #[test]
    fn the_previous_sleep_is_kept_to_26_significant_bits() {
        for ns in [
            0,
            1,
            2,
            999,
            (1 << 26) - 1,
            1 << 26,
            (1 << 26) + 1,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let kept = unpack(pack(ns));
            assert!(kept <= ns, "{ns}");
            if ns < 1 << 26 {
                assert_eq!(kept, ns);
            }
            assert!(ns - kept <= ns >> 26, "{ns}: {kept}");
        }
    }

    proptest::proptest! {
        /// Every sleep is in [delay, min(max_delay, 3 × previous)] and, drawn at the top of that
        /// range, grows by 3× (to 26 significant bits) until the cap, at every scale: a delay from
        /// 1 ns to 10 hours, a cap up to `Duration::MAX`.
        #[test]
        fn decorrelated_follows_its_formula_at_every_scale(
            delay_ns in 1..=36_000_000_000_000u64,
            cap_factor in proptest::prop_oneof![1..=1_000_000u64, proptest::prelude::Just(u64::MAX)],
            seed in proptest::prelude::any::<u64>(),
        ) {
            let delay = Duration::from_nanos(delay_ns);
            let cap = if cap_factor == u64::MAX { Duration::MAX } else { delay.saturating_mul(u32::try_from(cap_factor).unwrap()) };
            let p = decorrelated(delay, cap);
            let mut previous = delay;
            for sleep in p.delays_seeded(seed).take(60) {
                let high = previous.saturating_mul(3).min(cap);
                proptest::prop_assert!(sleep >= delay && sleep <= high, "{:?} not in [{:?}, {:?}]", sleep, delay, high);
                previous = sleep;
            }
            let mut previous = delay;
            for sleep in highest(&p, 60) {
                let high = previous.saturating_mul(3).min(cap).min(Duration::from_nanos(u64::MAX));
                let slack = Duration::from_nanos(u64::try_from(high.as_nanos() >> 25).unwrap());
                proptest::prop_assert!(sleep <= high && sleep + slack >= high, "{:?} not ≈ {:?}", sleep, high);
                previous = sleep;
            }
        }
    }
}
