//! The client-side adaptive throttle (see [`AdaptiveThrottle`]).

use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use crate::ConfigError;
use crate::error::Throttled;
use crate::sync::{AtomicU64, Ordering, now};

/// How many buckets the window is cut into.
const BUCKETS: usize = 20;
#[allow(clippy::cast_possible_truncation, reason = "20")]
const BUCKETS_U32: u32 = BUCKETS as u32;

/// The client-side adaptive throttle of Google's SRE book ("Handling Overload"): each client
/// counts, over a sliding window, the `requests` it tried to send and the `accepts` the
/// dependency answered, and rejects a new request locally with probability
///
/// ```text
/// max(0, (requests − K × accepts) / (requests + 1))
/// ```
///
/// While the dependency accepts everything, nothing is rejected; once it refuses more than
/// `1 − 1/K` of what it is sent, the client sheds its own requests so that what still reaches the
/// dependency stays near `K × accepts`. Every attempt (retries included) is a request, and a
/// request the throttle rejected counts too (it is what keeps the rejection going while the
/// dependency stays overloaded).
///
/// An attempt is *accepted* when the dependency answered it with something the call does not
/// retry (a success, or an error that is not retried): the same line the circuit breaker draws
/// between a success and a failure. A retryable error or a timeout is a refusal.
///
/// The window is cut into 20 buckets, each one atomic word per counter (the bucket's number and
/// its count): recording is one compare-and-swap, reading sums the buckets. No lock.
///
/// The client-side adaptive throttle, shared by every call that
/// names it.
///
/// ```
/// use retry_runtime::AdaptiveThrottle;
///
/// let throttle = AdaptiveThrottle::builder().k(2.0).build().unwrap();
/// // A dependency that accepts everything: nothing is shed.
/// for _ in 0..100 {
///     throttle.try_acquire().unwrap();
///     throttle.record(true);
/// }
/// assert_eq!(throttle.rejection_probability(), 0.0);
/// // One that refuses everything: the client sheds ever more of its own requests.
/// for _ in 0..1000 {
///     if throttle.try_acquire().is_ok() {
///         throttle.record(false);
///     }
/// }
/// assert!(throttle.rejection_probability() > 0.8);
/// ```
#[derive(Debug)]
pub struct AdaptiveThrottle {
    name: &'static str,
    k: f64,
    /// Nanoseconds per bucket.
    bucket: u64,
    /// The instant bucket 0 starts at: the first use.
    origin: OnceLock<Instant>,
    /// Per bucket: its number (high 32 bits) and the requests in it (low 32 bits).
    requests: [AtomicU64; BUCKETS],
    /// The same for accepts.
    accepts: [AtomicU64; BUCKETS],
}

impl AdaptiveThrottle {
    /// A builder with the SRE book's defaults: K = 2, a two-minute window.
    pub fn builder() -> AdaptiveThrottleBuilder {
        AdaptiveThrottleBuilder::default()
    }

    /// The name given to the builder (in events).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The multiplier K.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// Counts a request and decides whether to send it: `Err(Throttled)` with the probability
    /// the window gives (see [`rejection_probability`](Self::rejection_probability)). Call
    /// [`record`](Self::record) with the dependency's answer to a request it let through.
    ///
    /// # Errors
    /// [`Throttled`] when the request is rejected locally.
    pub fn try_acquire(&self) -> Result<(), Throttled> {
        let tick = self.tick();
        let (requests, accepts) = self.totals(tick);
        bump(&self.requests[tick as usize % BUCKETS], tick);
        let p = probability(requests, accepts, self.k);
        if p > 0.0 && crate::schedule::rng::with_jitter_rng(rand::RngExt::random::<f64>) < p {
            Err(Throttled::new())
        } else {
            Ok(())
        }
    }

    /// Records the dependency's answer to a request [`try_acquire`](Self::try_acquire) let
    /// through: `accepted` unless it refused it (a retryable error, a timeout).
    pub fn record(&self, accepted: bool) {
        if accepted {
            let tick = self.tick();
            bump(&self.accepts[tick as usize % BUCKETS], tick);
        }
    }

    /// The probability that a request made now is rejected:
    /// `max(0, (requests − K × accepts) / (requests + 1))` over the window.
    pub fn rejection_probability(&self) -> f64 {
        let (requests, accepts) = self.totals(self.tick());
        probability(requests, accepts, self.k)
    }

    /// The requests and accepts counted in the window now.
    ///
    /// ```
    /// let throttle = retry_runtime::AdaptiveThrottle::builder().build().unwrap();
    /// throttle.try_acquire().unwrap();
    /// throttle.record(true);
    /// assert_eq!(throttle.counts(), (1, 1));
    /// ```
    pub fn counts(&self) -> (u64, u64) {
        self.totals(self.tick())
    }

    /// The current bucket's number (wrapping).
    fn tick(&self) -> u32 {
        let now = now();
        let origin = *self.origin.get_or_init(|| now);
        let nanos = now.saturating_duration_since(origin).as_nanos();
        // Truncation wraps the bucket number: buckets are compared by wrapping difference.
        #[allow(clippy::cast_possible_truncation, reason = "wrapping bucket numbers")]
        let tick = (nanos / u128::from(self.bucket)) as u32;
        tick
    }

    fn totals(&self, tick: u32) -> (u64, u64) {
        let sum = |slots: &[AtomicU64; BUCKETS]| -> u64 {
            slots
                .iter()
                .map(|s| s.load(Ordering::Relaxed))
                .filter(|w| tick.wrapping_sub(bucket_of(*w)) < BUCKETS_U32)
                .map(|w| w & 0xFFFF_FFFF)
                .sum()
        };
        (sum(&self.requests), sum(&self.accepts))
    }
}

fn bucket_of(word: u64) -> u32 {
    (word >> 32) as u32
}

/// Adds one to the bucket `tick` in `slot`, starting it afresh if it still holds an older bucket.
fn bump(slot: &AtomicU64, tick: u32) {
    let _ = slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
        let t = bucket_of(w);
        if t == tick {
            let n = (w & 0xFFFF_FFFF).saturating_add(1).min(0xFFFF_FFFF);
            Some(u64::from(tick) << 32 | n)
        } else if t.wrapping_sub(tick) < BUCKETS_U32 {
            // The slot already holds a newer bucket (this thread was descheduled across a
            // bucket's end): the count belongs to a bucket that is gone. (Only a bucket less
            // than a window ahead is newer: one written 2^31 buckets ago is old, not ahead.)
            None
        } else {
            Some(u64::from(tick) << 32 | 1)
        }
    });
}

/// `max(0, (requests − K × accepts) / (requests + 1))`.
#[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
fn probability(requests: u64, accepts: u64, k: f64) -> f64 {
    let r = requests as f64;
    ((r - k * accepts as f64) / (r + 1.0)).max(0.0)
}

/// Builds an [`AdaptiveThrottle`].
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::AdaptiveThrottle;
///
/// let throttle = AdaptiveThrottle::builder()
///     .k(1.5)
///     .window(Duration::from_secs(60))
///     .name("payments")
///     .build()
///     .unwrap();
/// assert_eq!(throttle.k(), 1.5);
/// let err = AdaptiveThrottle::builder().k(0.0).build().unwrap_err();
/// assert_eq!(err.field(), "k");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct AdaptiveThrottleBuilder {
    k: f64,
    window: Duration,
    name: &'static str,
}

impl Default for AdaptiveThrottleBuilder {
    fn default() -> Self {
        AdaptiveThrottleBuilder {
            k: 2.0,
            window: Duration::from_secs(120),
            name: "throttle",
        }
    }
}

impl AdaptiveThrottleBuilder {
    /// The multiplier K (finite, ≥ 1; default 2): the dependency is sent up to K times what it
    /// accepts. Lower is more aggressive (1 sends only what was accepted); higher wastes more of
    /// the dependency's work on requests it refuses, but adapts faster when it recovers.
    pub fn k(mut self, k: f64) -> Self {
        self.k = k;
        self
    }

    /// How far back requests and accepts are counted (≥ 20 ms; default 2 minutes, as in the SRE
    /// book), in 20 buckets.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// A name for events (default `"throttle"`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Checks the settings and makes the throttle.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `k` (not finite, or below 1) or `window` (below 20 ms).
    pub fn build(self) -> Result<AdaptiveThrottle, ConfigError> {
        if !self.k.is_finite() || self.k < 1.0 {
            return Err(ConfigError::OutOfRange {
                field: "k",
                rule: "a finite number ≥ 1",
            });
        }
        let bucket = self.window.as_nanos() / BUCKETS as u128;
        if bucket < 1_000_000 {
            return Err(ConfigError::OutOfRange {
                field: "window",
                rule: "at least 20ms",
            });
        }
        Ok(AdaptiveThrottle {
            name: self.name,
            k: self.k,
            bucket: u64::try_from(bucket).unwrap_or(u64::MAX),
            origin: OnceLock::new(),
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            accepts: std::array::from_fn(|_| AtomicU64::new(0)),
        })
    }
}

#[cfg(all(test, not(loom)))]
#[allow(clippy::float_cmp, reason = "exact zeros")]
mod tests {
    use super::*;

    #[test]
    fn the_probability_is_the_books_formula() {
        assert_eq!(probability(0, 0, 2.0), 0.0);
        assert_eq!(probability(100, 50, 2.0), 0.0);
        assert!((probability(100, 25, 2.0) - 50.0 / 101.0).abs() < 1e-12);
        assert!((probability(99, 0, 2.0) - 0.99).abs() < 1e-12);
        assert!((probability(100, 25, 1.0) - 75.0 / 101.0).abs() < 1e-12);
    }

    #[tokio::test(start_paused = true)]
    async fn counts_age_out_of_the_window() {
        let t = AdaptiveThrottle::builder()
            .window(Duration::from_secs(20))
            .build()
            .unwrap();
        for _ in 0..10 {
            let _ = t.try_acquire();
        }
        assert_eq!(t.counts(), (10, 0));
        tokio::time::advance(Duration::from_secs(10)).await;
        let _ = t.try_acquire();
        t.record(true);
        assert_eq!(t.counts(), (11, 1));
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(t.counts(), (1, 1), "the first ten are over 20 s old");
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(t.counts(), (0, 0));
        assert_eq!(t.rejection_probability(), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn what_is_sent_converges_to_k_times_what_is_accepted() {
        crate::seed_rng(17);
        let t = AdaptiveThrottle::builder().k(2.0).build().unwrap();
        // The dependency can take one request per round of ten tries; it refuses the others.
        let (mut sent, mut accepted) = (0u32, 0u32);
        for round in 0..2_000u32 {
            let mut taken = false;
            for _ in 0..10 {
                if t.try_acquire().is_ok() {
                    sent += 1;
                    let ok = !taken;
                    taken = true;
                    accepted += u32::from(ok);
                    t.record(ok);
                }
            }
            let _ = round;
        }
        // Sent ≈ K × accepted (a round in which all ten are shed serves nobody).
        let ratio = f64::from(sent) / f64::from(accepted);
        assert!(
            (1.8..2.3).contains(&ratio),
            "sent {sent}, accepted {accepted}"
        );
        assert!(
            (2_500..4_600).contains(&sent),
            "sent {sent} of 20000: most tries are shed"
        );
    }

    #[test]
    fn bad_settings_name_their_field() {
        for (b, field) in [
            (AdaptiveThrottle::builder().k(0.5), "k"),
            (AdaptiveThrottle::builder().k(f64::NAN), "k"),
            (AdaptiveThrottle::builder().k(f64::INFINITY), "k"),
            (
                AdaptiveThrottle::builder().window(Duration::from_millis(10)),
                "window",
            ),
        ] {
            assert_eq!(b.build().unwrap_err().field(), field);
        }
    }
}
