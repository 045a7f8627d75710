//! Fault injection as a policy setting: a rate of injected errors and added latency per attempt,
//! drawn from a seed, so that a staging service can rehearse an outage through the code path it
//! runs in production (Polly's chaos strategies, Simmy's `InjectionRate` and seed, as one
//! setting of the retry policy).
//!
//! The draws: a policy with [`inject_faults`](crate::RetryPolicyBuilder::inject_faults) counts
//! the attempts begun through it (one relaxed atomic addition per attempt, shared by every call,
//! task and thread using the policy); attempt `n` (0-based, in the order the attempts began)
//! draws `u = SplitMix64(seed, n)`, a number in [0, 1) that depends on the seed and `n` alone.
//! Then:
//!
//! - `u < rate`: an injected **error**. The attempt is not made (the body is not polled): after
//!   the added `latency`, if any, it fails with the call's timeout error, made from an
//!   [`Elapsed`](crate::Elapsed) for which [`is_injected`](crate::Elapsed::is_injected) is true,
//!   through the conversion the driver already has (`E: FromElapsed`, or `timeout_into`). It is a
//!   timeout-class failure: retried per the policy as a real timeout would be.
//! - `rate ≤ u < rate + latency_rate`: injected **latency**. The attempt is made after `latency`;
//!   the latency counts against the attempt's `timeout` (a slow dependency): when it reaches the
//!   attempt's time limit first, the attempt times out at its limit, unpolled.
//! - Otherwise the attempt runs untouched.
//!
//! So over `N` attempts through one policy the number of injected errors is the number of the
//! first `N` draws below `rate`, the same on every run (whichever thread made which attempt);
//! [`RetryPolicy::rewind_faults`](crate::RetryPolicy::rewind_faults) starts the sequence again.
//!
//! Each injected fault is counted where the attempt's outcome is decided: a `DEBUG` event under
//! the target `reattempt` with `injected = true` and `kind` (`"error"` or `"latency"`), and with
//! the `metrics` feature the counter `reattempt_injected_faults_total` (labels `name`, `kind`).
//!
//! A driver that has no conversion of a timeout into the call's error ([`NoTimeout`]: the
//! closure API's `without_timeout()`, a blocking `#[retryable]` fn) cannot fail an attempt with
//! the call's error: it injects the latency only (an injected error there is an attempt made
//! after `latency`, if any, and counted as injected latency).
//!
//! [`NoTimeout`]: crate::NoTimeout

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::ConfigError;

/// Fault injection for a [`RetryPolicy`](crate::RetryPolicy) (feature `testing`): a rate of
/// injected errors, an added latency (on injected errors, and on a further `latency_rate` of
/// attempts), and the seed the draws come from. Off unless set: a policy without it draws
/// nothing. See [the module](crate::testing::faults) for the rules.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use retry_runtime::RetryPolicy;
/// use retry_runtime::testing::FaultInjection;
///
/// let faults = FaultInjection::builder().rate(1.0).seed(7).build()?;
/// let policy = RetryPolicy::builder().max_attempts(2).inject_faults(faults).build()?;
/// let mut ran = 0;
/// let out = policy.retry(|| { ran += 1; async { Ok::<_, std::io::Error>(()) } }).await;
/// assert_eq!(out.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
/// assert_eq!(ran, 0, "an injected error is an attempt not made");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultInjection {
    rate: f64,
    latency: Option<Duration>,
    latency_rate: f64,
    seed: u64,
}

/// What fault injection made of one attempt (see [`FaultInjection::fault_at`]).
///
/// ```
/// use retry_runtime::testing::InjectedFault;
/// assert_eq!(InjectedFault::Error.as_str(), "error");
/// assert_eq!(InjectedFault::Latency.as_str(), "latency");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InjectedFault {
    /// The attempt was not made: it failed with an injected error (after the latency, if any).
    Error,
    /// The attempt was made after the added latency.
    Latency,
}

impl InjectedFault {
    /// The label of the fault in events and metrics: `"error"` or `"latency"`.
    ///
    /// ```
    /// assert_eq!(retry_runtime::testing::InjectedFault::Error.as_str(), "error");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            InjectedFault::Error => "error",
            InjectedFault::Latency => "latency",
        }
    }
}

impl fmt::Display for InjectedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FaultInjection {
    /// A builder injecting nothing (rate 0, no latency, seed 0).
    ///
    /// ```
    /// let f = retry_runtime::testing::FaultInjection::builder().build().unwrap();
    /// assert_eq!(f.rate(), 0.0);
    /// ```
    pub const fn builder() -> FaultInjectionBuilder {
        FaultInjectionBuilder {
            rate: 0.0,
            latency: None,
            latency_rate: 0.0,
            seed: 0,
        }
    }

    /// The fraction of attempts that fail with an injected error, in [0, 1].
    ///
    /// ```
    /// let f = retry_runtime::testing::FaultInjection::builder().rate(0.25).build().unwrap();
    /// assert_eq!(f.rate(), 0.25);
    /// ```
    pub const fn rate(&self) -> f64 {
        self.rate
    }

    /// The latency added to an injected attempt (`None`: none).
    ///
    /// ```
    /// use std::time::Duration;
    /// let f = retry_runtime::testing::FaultInjection::builder().latency(Duration::from_millis(50)).build().unwrap();
    /// assert_eq!(f.latency(), Some(Duration::from_millis(50)));
    /// ```
    pub const fn latency(&self) -> Option<Duration> {
        self.latency
    }

    /// The fraction of attempts, besides the injected errors, that are made after the added
    /// latency, in [0, 1 − `rate`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let f = retry_runtime::testing::FaultInjection::builder()
    ///     .latency(Duration::from_millis(50)).latency_rate(0.5).build().unwrap();
    /// assert_eq!(f.latency_rate(), 0.5);
    /// ```
    pub const fn latency_rate(&self) -> f64 {
        self.latency_rate
    }

    /// The seed the draws come from.
    ///
    /// ```
    /// let f = retry_runtime::testing::FaultInjection::builder().seed(7).build().unwrap();
    /// assert_eq!(f.seed(), 7);
    /// ```
    pub const fn seed(&self) -> u64 {
        self.seed
    }

    /// The draw of attempt `n` (0-based, in the order attempts begin through the policy): a
    /// number in [0, 1), from the seed and `n` alone (the `n`-th output of `SplitMix64` seeded
    /// with the seed).
    ///
    /// ```
    /// let f = retry_runtime::testing::FaultInjection::builder().seed(1).build().unwrap();
    /// assert_eq!(f.draw(3), f.draw(3));
    /// assert!((0.0..1.0).contains(&f.draw(3)));
    /// ```
    pub fn draw(&self, n: u64) -> f64 {
        const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
        // 2^-53.
        const ULP: f64 = 1.0 / 9_007_199_254_740_992.0;
        let mut z = self
            .seed
            .wrapping_add(n.wrapping_add(1).wrapping_mul(GOLDEN));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits, as a double in [0, 1).
        #[allow(clippy::cast_precision_loss, reason = "53 bits: exact")]
        let u = (z >> 11) as f64;
        u * ULP
    }

    /// What attempt `n` (as in [`draw`](Self::draw)) is made into: `Some(Error)` when its draw
    /// is below `rate`, `Some(Latency)` when it is below `rate + latency_rate`, else `None`.
    ///
    /// ```
    /// use retry_runtime::testing::{FaultInjection, InjectedFault};
    /// let f = FaultInjection::builder().rate(0.1).seed(7).build().unwrap();
    /// let errors = (0..10_000).filter(|&n| f.fault_at(n) == Some(InjectedFault::Error)).count();
    /// assert!((900..=1100).contains(&errors), "{errors}");
    /// ```
    pub fn fault_at(&self, n: u64) -> Option<InjectedFault> {
        let u = self.draw(n);
        if u < self.rate {
            Some(InjectedFault::Error)
        } else if u < self.rate + self.latency_rate {
            Some(InjectedFault::Latency)
        } else {
            None
        }
    }
}

/// Builds a [`FaultInjection`]; every method is `const`, so a policy injecting faults can live
/// in a `static`.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::testing::FaultInjection;
///
/// let f = FaultInjection::builder()
///     .rate(0.1)
///     .latency(Duration::from_millis(50))
///     .latency_rate(0.2)
///     .seed(7)
///     .build()
///     .unwrap();
/// assert_eq!((f.rate(), f.latency_rate(), f.seed()), (0.1, 0.2, 7));
/// let err = FaultInjection::builder().rate(1.5).build().unwrap_err();
/// assert_eq!(err.field(), "rate");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct FaultInjectionBuilder {
    rate: f64,
    latency: Option<Duration>,
    latency_rate: f64,
    seed: u64,
}

impl FaultInjectionBuilder {
    /// The fraction of attempts that fail with an injected error, in [0, 1] (default 0).
    pub const fn rate(mut self, rate: f64) -> Self {
        self.rate = rate;
        self
    }

    /// The latency added to each injected attempt: an injected error comes after it, and
    /// `latency_rate` of the other attempts are made after it (default: none).
    pub const fn latency(mut self, latency: Duration) -> Self {
        self.latency = Some(latency);
        self
    }

    /// The fraction of attempts, besides the injected errors, made after the added `latency`
    /// (default 0; needs `latency`; `rate + latency_rate` at most 1).
    pub const fn latency_rate(mut self, rate: f64) -> Self {
        self.latency_rate = rate;
        self
    }

    /// The seed the draws come from (default 0): the same seed, the same faults.
    pub const fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// [`ConfigError::OutOfRange`] naming `rate` or `latency_rate` when it is NaN or outside
    /// [0, 1], or `latency_rate` when `rate + latency_rate` exceeds 1;
    /// [`ConfigError::Requires`] for a `latency_rate` above 0 without a `latency`.
    ///
    /// ```
    /// use retry_runtime::testing::FaultInjection;
    /// let err = FaultInjection::builder().rate(f64::NAN).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `rate`: must be a number in [0, 1]");
    /// let err = FaultInjection::builder().latency_rate(0.5).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `latency_rate`: only applies with `latency`");
    /// ```
    pub const fn build(self) -> Result<FaultInjection, ConfigError> {
        const UNIT: &str = "a number in [0, 1]";
        // `!(0 ≤ x ≤ 1)` is also true of NaN.
        if !(self.rate >= 0.0 && self.rate <= 1.0) {
            return Err(ConfigError::OutOfRange {
                field: "rate",
                rule: UNIT,
            });
        }
        if !(self.latency_rate >= 0.0 && self.latency_rate <= 1.0) {
            return Err(ConfigError::OutOfRange {
                field: "latency_rate",
                rule: UNIT,
            });
        }
        if self.rate + self.latency_rate > 1.0 {
            return Err(ConfigError::OutOfRange {
                field: "latency_rate",
                rule: "at most 1 − `rate`",
            });
        }
        if self.latency_rate > 0.0 && self.latency.is_none() {
            return Err(ConfigError::Requires {
                field: "latency_rate",
                other: "latency",
            });
        }
        Ok(FaultInjection {
            rate: self.rate,
            latency: self.latency,
            latency_rate: self.latency_rate,
            seed: self.seed,
        })
    }
}

/// A policy's fault injection: the setting and the count of attempts drawn for.
pub(crate) struct Faults {
    pub(crate) setting: FaultInjection,
    drawn: AtomicU64,
}

impl Faults {
    pub(crate) const fn new(setting: FaultInjection) -> Self {
        Faults {
            setting,
            drawn: AtomicU64::new(0),
        }
    }

    /// The fault of the next attempt through the policy.
    #[cold]
    pub(crate) fn next(&self) -> Option<InjectedFault> {
        let n = self.drawn.fetch_add(1, Ordering::Relaxed);
        self.setting.fault_at(n)
    }

    pub(crate) fn drawn(&self) -> u64 {
        self.drawn.load(Ordering::Relaxed)
    }

    pub(crate) fn rewind(&self) {
        self.drawn.store(0, Ordering::Relaxed);
    }
}

impl Clone for Faults {
    /// A clone goes on from the same place in the sequence.
    fn clone(&self) -> Self {
        Faults {
            setting: self.setting,
            drawn: AtomicU64::new(self.drawn()),
        }
    }
}

impl PartialEq for Faults {
    /// The settings, not where the sequence is.
    fn eq(&self, other: &Self) -> bool {
        self.setting == other.setting
    }
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("setting", &self.setting)
            .field("drawn", &self.drawn())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(f: &FaultInjection, n: u64) -> Vec<u64> {
        (0..n)
            .filter(|&i| f.fault_at(i) == Some(InjectedFault::Error))
            .collect()
    }

    #[test]
    fn a_tenth_of_ten_thousand_draws_within_a_hundred_and_the_same_again() {
        for seed in [0, 7, 42, u64::MAX] {
            let f = FaultInjection::builder()
                .rate(0.1)
                .seed(seed)
                .build()
                .unwrap();
            let first = errors(&f, 10_000);
            assert!(
                (900..=1100).contains(&first.len()),
                "seed {seed}: {}",
                first.len()
            );
            assert_eq!(first, errors(&f, 10_000), "a rerun draws the same");
        }
    }

    #[test]
    fn the_policy_counter_gives_the_same_set_across_threads() {
        let f = FaultInjection::builder().rate(0.1).seed(7).build().unwrap();
        let faults = Faults::new(f);
        let counts: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..2_500)
                            .filter(|_| faults.next() == Some(InjectedFault::Error))
                            .count()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let total: usize = counts.iter().sum();
        assert_eq!(total, errors(&f, 10_000).len());
        assert_eq!(faults.drawn(), 10_000);
        faults.rewind();
        let again = (0..10_000)
            .filter(|_| faults.next() == Some(InjectedFault::Error))
            .count();
        assert_eq!(again, total);
    }

    #[test]
    fn rates_zero_and_one_and_latency_share() {
        let none = FaultInjection::builder().seed(3).build().unwrap();
        assert!((0..10_000).all(|n| none.fault_at(n).is_none()));
        let all = FaultInjection::builder().rate(1.0).build().unwrap();
        assert!((0..10_000).all(|n| all.fault_at(n) == Some(InjectedFault::Error)));
        let slow = FaultInjection::builder()
            .rate(0.1)
            .latency(Duration::from_millis(5))
            .latency_rate(0.2)
            .seed(9)
            .build()
            .unwrap();
        let latency = (0..10_000)
            .filter(|&n| slow.fault_at(n) == Some(InjectedFault::Latency))
            .count();
        assert!((1800..=2200).contains(&latency), "{latency}");
    }

    #[test]
    fn invalid_settings_name_their_field() {
        for (b, field) in [
            (FaultInjection::builder().rate(-0.1), "rate"),
            (FaultInjection::builder().rate(f64::NAN), "rate"),
            (FaultInjection::builder().rate(f64::INFINITY), "rate"),
            (
                FaultInjection::builder()
                    .latency(Duration::from_millis(1))
                    .latency_rate(f64::NAN),
                "latency_rate",
            ),
            (
                FaultInjection::builder()
                    .rate(0.6)
                    .latency(Duration::from_millis(1))
                    .latency_rate(0.6),
                "latency_rate",
            ),
            (FaultInjection::builder().latency_rate(0.1), "latency_rate"),
        ] {
            assert_eq!(b.build().unwrap_err().field(), field, "{b:?}");
        }
    }
}
