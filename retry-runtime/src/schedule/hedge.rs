//! The latency estimator behind a quantile `hedge_after`: [`Latencies`], a small lock-free
//! streaming histogram of a function's recent attempt latencies. What the delay is (fixed, or a
//! quantile of these latencies), [`HedgeAfter`](crate::HedgeAfter), is one of retry-rules' rules.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Sub-buckets per octave: a bucket spans 1/4 of an octave (about 19 %).
const SUB: u32 = 4;
/// Octaves of microseconds covered, from 4 µs to 4 × 2^40 µs (about 51 days); longer latencies
/// count in the last bucket. The range must reach far past any latency a call is hedged at: a
/// quantile that falls in the last bucket reads as the range's top edge, so a dependency slower
/// than the range would be hedged on every call (with 24 octaves, any slower than about 67 s).
const OCTAVES: u32 = 40;
const BUCKETS: usize = (SUB * OCTAVES) as usize;
/// The buckets are halved after this many records: recent latencies weigh most.
const DECAY_EVERY: u32 = 1024;

/// A lock-free streaming estimate of a function's attempt latencies, for
/// [`HedgeAfter::Quantile`](crate::HedgeAfter::Quantile): a histogram of 160 atomic counters
/// over log-spaced buckets (four per octave, from 4 µs to about 51 days, so an estimate is
/// within about 19 % above the true quantile whatever the dependency's speed: a `"p95"` hedges
/// about 5 % of the calls to a dependency that takes 10 ms or 10 minutes), halved every 1024
/// records so that it follows a dependency whose speed changes. Recording is two relaxed atomic
/// additions; a quantile reads the 160 counters.
///
/// Every [`RetryPolicy`](crate::RetryPolicy) holds one: a `#[retryable]` function with its own
/// keys has its own; functions sharing a `policy` share it. A clone starts with a copy of the
/// counts, and two estimators always compare equal (they are state, not settings).
///
/// ```
/// use std::time::Duration;
/// use reattempt::runtime::Latencies;
///
/// let l = Latencies::new();
/// for ms in 1..=100 {
///     l.record(Duration::from_millis(ms));
/// }
/// let p90 = l.quantile(0.90).unwrap();
/// assert!(p90 >= Duration::from_millis(90) && p90 <= Duration::from_millis(108), "{p90:?}");
/// ```
pub struct Latencies {
    buckets: [AtomicU32; BUCKETS],
    records: AtomicU32,
}

impl Latencies {
    /// Fewer counted latencies than this give no estimate (the quantile's `start` applies).
    pub const MIN_SAMPLES: u32 = 20;

    /// An empty estimator.
    ///
    /// ```
    /// assert!(reattempt::runtime::Latencies::new().quantile(0.5).is_none());
    /// ```
    pub const fn new() -> Self {
        Latencies {
            buckets: [const { AtomicU32::new(0) }; BUCKETS],
            records: AtomicU32::new(0),
        }
    }

    fn bucket(latency: Duration) -> usize {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .max(4);
        let octave = us.ilog2(); // ≥ 2
        let sub = (us >> (octave - 2)) & u64::from(SUB - 1);
        let i = (octave - 2) * SUB + u32::try_from(sub).unwrap_or(0);
        (i as usize).min(BUCKETS - 1)
    }

    /// The upper edge of bucket `i`.
    fn upper(i: usize) -> Duration {
        let i = u32::try_from(i).unwrap_or(0);
        let (octave, sub) = (i / SUB, i % SUB);
        Duration::from_micros(u64::from(SUB + sub + 1) << octave)
    }

    /// Counts one attempt's latency.
    pub fn record(&self, latency: Duration) {
        self.buckets[Self::bucket(latency)].fetch_add(1, Ordering::Relaxed);
        let n = self.records.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        if n.is_multiple_of(DECAY_EVERY) {
            for b in &self.buckets {
                let c = b.load(Ordering::Relaxed);
                // Concurrent records may land meanwhile: they are kept.
                b.fetch_sub(c / 2, Ordering::Relaxed);
            }
        }
    }

    /// The estimated `q`-quantile (`q` in (0, 1)) of the recent latencies: the upper edge of the
    /// bucket holding it. `None` with fewer than [`MIN_SAMPLES`](Self::MIN_SAMPLES) counted.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let counts: [u32; BUCKETS] =
            std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed));
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total < u64::from(Self::MIN_SAMPLES) {
            return None;
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a rank within the total"
        )]
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for (i, &c) in counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Some(Self::upper(i));
            }
        }
        Some(Self::upper(BUCKETS - 1))
    }
}

/// What a quantile [`HedgeAfter`](crate::HedgeAfter) reads: [`Latencies::quantile`].
///
/// ```
/// use std::time::Duration;
/// use reattempt::{HedgeAfter, runtime::Latencies};
///
/// let latencies = Latencies::new();
/// let p95 = HedgeAfter::quantile(95.0);
/// assert_eq!(p95.delay(&latencies), HedgeAfter::DEFAULT_START, "nothing seen yet");
/// for _ in 0..100 {
///     latencies.record(Duration::from_millis(10));
/// }
/// let d = p95.delay(&latencies);
/// assert!(d >= Duration::from_millis(10) && d < Duration::from_millis(12), "{d:?}");
/// ```
impl retry_rules::Quantiles for Latencies {
    fn quantile(&self, q: f64) -> Option<Duration> {
        Latencies::quantile(self, q)
    }
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Latencies {
    fn clone(&self) -> Self {
        let l = Latencies::new();
        for (to, from) in l.buckets.iter().zip(&self.buckets) {
            to.store(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        l
    }
}

impl PartialEq for Latencies {
    /// Always: an estimator is state, not a setting.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Latencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latencies")
            .field("p50", &self.quantile(0.5))
            .field("p95", &self.quantile(0.95))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HedgeAfter;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn buckets_are_ordered_and_their_edges_bound_them() {
        let mut last = 0;
        for us in [
            4u64,
            5,
            7,
            8,
            9,
            15,
            16,
            100,
            1000,
            12_345,
            1_000_000,
            60_000_000,
            600_000_000,
            86_400_000_000,
            30 * 86_400_000_000,
        ] {
            let d = Duration::from_micros(us);
            let i = Latencies::bucket(d);
            assert!(i >= last, "{us}");
            last = i;
            assert!(Latencies::upper(i) > d, "{us}: {:?}", Latencies::upper(i));
            if i > 0 {
                assert!(Latencies::upper(i - 1) <= d, "{us}");
            }
            // Within a quarter octave.
            assert!(
                Latencies::upper(i).as_secs_f64() <= d.as_secs_f64() * 1.26,
                "{us}"
            );
        }
        assert_eq!(Latencies::bucket(Duration::ZERO), 0);
        assert_eq!(Latencies::bucket(Duration::MAX), BUCKETS - 1);
    }

    #[test]
    fn the_quantile_of_a_uniform_spread_is_close() {
        let l = Latencies::new();
        for i in 0..1000u64 {
            l.record(Duration::from_micros(1000 + i * 10)); // 1 ms to 11 ms
        }
        let p95 = l.quantile(0.95).unwrap();
        assert!(
            p95 >= Duration::from_micros(10_500) && p95 <= 13 * MS,
            "{p95:?}"
        );
        let p50 = l.quantile(0.5).unwrap();
        assert!(p50 >= 6 * MS && p50 <= 8 * MS, "{p50:?}");
    }

    #[test]
    fn old_latencies_fade() {
        let l = Latencies::new();
        for _ in 0..2000 {
            l.record(100 * MS);
        }
        // The dependency got fast: after a few decays the estimate follows it.
        for _ in 0..8 * DECAY_EVERY {
            l.record(2 * MS);
        }
        let p95 = l.quantile(0.95).unwrap();
        assert!(p95 < 3 * MS, "{p95:?}");
    }

    #[test]
    fn too_few_samples_give_the_start_and_the_floor_holds() {
        let l = Latencies::new();
        let h = HedgeAfter::Quantile {
            percentile: 50.0,
            floor: 5 * MS,
            start: 40 * MS,
        };
        for _ in 0..Latencies::MIN_SAMPLES - 1 {
            l.record(MS);
        }
        assert_eq!(h.delay(&l), 40 * MS);
        l.record(MS);
        assert_eq!(
            h.delay(&l),
            5 * MS,
            "the estimate (~1.25 ms) is below the floor"
        );
    }

    /// Issue 25, finding 2: a dependency that takes about 10 minutes. Its p95 must be its own
    /// (within a bucket's width above it), not the estimator's top edge: a delay shorter than
    /// nearly every attempt hedges every call.
    #[test]
    fn the_p95_of_a_ten_minute_dependency_is_about_ten_minutes() {
        let l = Latencies::new();
        let minute = Duration::from_secs(60);
        for i in 0..100u32 {
            // 9 to 11 minutes, evenly.
            l.record(9 * minute + 2 * minute * i / 100);
        }
        let p95 = l.quantile(0.95).unwrap();
        assert!(
            p95 >= Duration::from_secs(10 * 60 + 50) && p95 <= 14 * minute,
            "{p95:?}"
        );
        let h = HedgeAfter::quantile(95.0);
        let d = h.delay(&l);
        assert!(d >= Duration::from_secs(10 * 60 + 50), "{d:?}");
        // About 5 % of such calls are slower than the delay: at most a handful here.
        let hedged = (0..100u32)
            .filter(|&i| 9 * minute + 2 * minute * i / 100 > d)
            .count();
        assert!(hedged <= 5, "{hedged} of 100 would be hedged");
    }

    #[test]
    fn concurrent_records_all_count() {
        let l = std::sync::Arc::new(Latencies::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        l.record(10 * MS);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let total: u32 = l.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum();
        assert_eq!(total, 800, "below DECAY_EVERY: nothing halved");
    }
}
