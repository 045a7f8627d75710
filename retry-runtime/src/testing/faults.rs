//! Fault injection as a policy setting: a rate of injected errors and added latency per attempt,
//! drawn from a seed, so that a staging service can rehearse an outage through the code path it
//! runs in production (Polly's chaos strategies, Simmy's `InjectionRate` and seed, as one
//! setting of the retry policy).
//!
//! The draws: a policy with [`inject_faults`](crate::RetryPolicyBuilder::inject_faults)
//! numbers the calls made through it (0, 1, 2 …, in the order their first attempts begin; one
//! relaxed atomic addition per call, shared by every task and thread using the policy), and
//! attempt `a` (1-based) of call `k` draws `u = SplitMix64(seed, k · 2^26 + a)`, a number in
//! [0, 1) that depends on the seed, `k` and `a` alone ([`FaultInjection::draw`]). Then:
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
//! So `N` calls through one policy meet the same faults on every run, attempt by attempt: call
//! `k`'s faults depend on `k` alone, not on how the calls' attempts interleave on threads, so
//! the counts (injected faults, failed calls) are the same however the calls are scheduled, and
//! the calls that fail are the same ones in the order the calls begin (for calls made one after
//! another, exactly the same calls).
//! [`RetryPolicy::rewind_faults`](crate::RetryPolicy::rewind_faults) starts the numbering again.
//!
//! Each injected fault is counted where the attempt's outcome is decided: a `DEBUG` event under
//! the target `reattempt` with `injected = true` and `kind` (`"error"` or `"latency"`), and with
//! the `metrics` feature the counter `reattempt.faults.injected` (attributes `reattempt.name`, `reattempt.fault`).
//!
//! A driver that has no conversion of a timeout into the call's error ([`NoTimeout`]: the
//! closure API's and the tower layer's `without_timeout()`, a blocking `#[retryable]` fn)
//! cannot fail an attempt with the call's error: it injects the latency only (an injected error
//! there is an attempt made after `latency`, if any, and counted as injected latency).
//!
//! Every driver injects faults by these rules, from the same counter:
//!
//! - `#[retryable(policy = …)]`: an `async fn`'s attempts (the generated loop, the closure
//!   driver it runs through, and a method lending `&mut self` or a `&mut` argument, whose
//!   attempts are timed the same way); a blocking fn, latency only;
//! - the closure API ([`RetryPolicy::retry`](crate::RetryPolicy::retry)), and so the reqwest
//!   middleware, which runs its attempts through it;
//! - the tower layer's `RetryService` (feature `tower`), and so the gRPC layer built on it;
//! - a hedged call (a policy with `hedge_after`, through any of the above): each copy draws, the
//!   first attempt, a retry and a hedge alike. A copy's fault is its own: a hedge is not slowed
//!   or failed by the fault of the copy beside it, and an injected latency counts against the
//!   copy's own timeout. A copy dropped because another answered first is counted with the
//!   fault drawn for it, if any (its attempt was begun).
//!
//! The untimed async attempt of an attribute without a `policy` (no `timeout`) draws nothing:
//! its policy, built from the attribute's keys, cannot inject faults.
//!
//! [`NoTimeout`]: crate::NoTimeout

use std::cell::Cell;
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
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     use std::time::Duration;
///     use reattempt::RetryPolicy;
///     use reattempt::testing::FaultInjection;
///
///     let faults = FaultInjection::builder().rate(1.0).seed(7).build()?;
///     let policy = RetryPolicy::builder().max_attempts(2).inject_faults(faults).build()?;
///     let mut ran = 0;
///     let out = policy.retry(|| { ran += 1; async { Ok::<_, std::io::Error>(()) } }).await;
///     assert_eq!(out.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
///     assert_eq!(ran, 0, "an injected error is an attempt not made");
///     Ok(())
/// }
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
/// use reattempt::testing::InjectedFault;
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
    /// assert_eq!(reattempt::testing::InjectedFault::Error.as_str(), "error");
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
    /// let f = reattempt::testing::FaultInjection::builder().build().unwrap();
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
    /// let f = reattempt::testing::FaultInjection::builder().rate(0.25).build().unwrap();
    /// assert_eq!(f.rate(), 0.25);
    /// ```
    pub const fn rate(&self) -> f64 {
        self.rate
    }

    /// The latency added to an injected attempt (`None`: none).
    ///
    /// ```
    /// use std::time::Duration;
    /// let f = reattempt::testing::FaultInjection::builder().latency(Duration::from_millis(50)).build().unwrap();
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
    /// let f = reattempt::testing::FaultInjection::builder()
    ///     .latency(Duration::from_millis(50)).latency_rate(0.5).build().unwrap();
    /// assert_eq!(f.latency_rate(), 0.5);
    /// ```
    pub const fn latency_rate(&self) -> f64 {
        self.latency_rate
    }

    /// The seed the draws come from.
    ///
    /// ```
    /// let f = reattempt::testing::FaultInjection::builder().seed(7).build().unwrap();
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
    /// let f = reattempt::testing::FaultInjection::builder().seed(1).build().unwrap();
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
    /// use reattempt::testing::{FaultInjection, InjectedFault};
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
/// use reattempt::testing::FaultInjection;
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
    /// use reattempt::testing::FaultInjection;
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
    /// The attempts that drew.
    drawn: AtomicU64,
    /// The calls that drew (each call's number, in the order their first attempts drew).
    calls: AtomicU64,
}

/// Where a call's attempt `a` draws: `call · 2^26 + a` (a call makes fewer than 2^26 attempts).
const fn draw_index(call: u64, attempt: u32) -> u64 {
    call.wrapping_shl(26) | attempt as u64
}

impl Faults {
    pub(crate) const fn new(setting: FaultInjection) -> Self {
        Faults {
            setting,
            drawn: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// The fault of attempt `attempt` of the call whose number is in `call` (taken now, at the
    /// call's first draw).
    #[cold]
    pub(crate) fn next(&self, call: &Cell<Option<u64>>, attempt: u32) -> Option<InjectedFault> {
        self.drawn.fetch_add(1, Ordering::Relaxed);
        let k = if let Some(k) = call.get() {
            k
        } else {
            let k = self.calls.fetch_add(1, Ordering::Relaxed);
            call.set(Some(k));
            k
        };
        self.setting.fault_at(draw_index(k, attempt))
    }

    pub(crate) fn drawn(&self) -> u64 {
        self.drawn.load(Ordering::Relaxed)
    }

    pub(crate) fn rewind(&self) {
        self.drawn.store(0, Ordering::Relaxed);
        self.calls.store(0, Ordering::Relaxed);
    }
}

impl Clone for Faults {
    /// A clone goes on from the same place in the sequence.
    fn clone(&self) -> Self {
        Faults {
            setting: self.setting,
            drawn: AtomicU64::new(self.drawn()),
            calls: AtomicU64::new(self.calls.load(Ordering::Relaxed)),
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
            .field("calls", &self.calls.load(Ordering::Relaxed))
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

    /// One call's first attempt: a fresh call number.
    fn first_attempt(faults: &Faults) -> Option<InjectedFault> {
        faults.next(&Cell::new(None), 1)
    }

    #[test]
    fn the_calls_numbers_give_the_same_faults_across_threads() {
        let f = FaultInjection::builder().rate(0.1).seed(7).build().unwrap();
        let faults = Faults::new(f);
        let counts: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..2_500)
                            .filter(|_| first_attempt(&faults) == Some(InjectedFault::Error))
                            .count()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let total: usize = counts.iter().sum();
        let direct = (0..10_000)
            .filter(|&k| f.fault_at(draw_index(k, 1)) == Some(InjectedFault::Error))
            .count();
        assert_eq!(total, direct);
        assert_eq!(faults.drawn(), 10_000);
        faults.rewind();
        let again = (0..10_000)
            .filter(|_| first_attempt(&faults) == Some(InjectedFault::Error))
            .count();
        assert_eq!(again, total);
    }

    #[test]
    fn a_calls_attempts_draw_from_its_own_number() {
        let f = FaultInjection::builder().rate(0.5).seed(1).build().unwrap();
        let faults = Faults::new(f);
        let call = Cell::new(None);
        let drawn: Vec<_> = (1..=5).map(|a| faults.next(&call, a)).collect();
        assert_eq!(call.get(), Some(0));
        let expected: Vec<_> = (1..=5).map(|a| f.fault_at(draw_index(0, a))).collect();
        assert_eq!(drawn, expected);
        // Another call takes the next number.
        let other = Cell::new(None);
        let _ = faults.next(&other, 1);
        assert_eq!(other.get(), Some(1));
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
