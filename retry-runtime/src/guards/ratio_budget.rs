//! The ratio kind of [`RetryBudget`](crate::RetryBudget): Finagle's `RetryBudget` and tower's
//! `TpsBudget`, retries as a share of the requests of the last `ttl` plus a small floor (see
//! [`RetryBudget::ratio`](crate::RetryBudget::ratio)). The budget's module builds on this one
//! (`RatioBudgetBuilder::build` is there).

use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use crate::ConfigError;
use crate::sync::{AtomicU64, Ordering, now};

/// How many slots `ttl` is cut into (tower's and Finagle's 10).
const SLOTS: usize = 10;
#[allow(clippy::cast_possible_truncation, reason = "10")]
const SLOTS_U32: u32 = SLOTS as u32;

/// What one retry costs, in thousandths of a retry (the unit the slots count in).
pub(crate) const MILLI: i64 = 1000;

/// The ratio state: deposits and withdrawals of the last `ttl`, in [`SLOTS`] slots of a tenth of
/// it each, over a standing reserve of `min_retries_per_second × ttl` retries. Each slot is one
/// atomic word: the number of the tenth of `ttl` it counts (high 32 bits, wrapping) and its
/// balance in thousandths of a retry (low 32 bits, signed). A withdrawal reads the sum, then
/// takes: withdrawals racing each other may overdraw the budget by as many retries as there are
/// racers (tower's `TpsBudget` does the same).
#[derive(Debug)]
pub(crate) struct Ratio {
    /// Thousandths of a retry each request deposits (`ratio × 1000`).
    deposit: i64,
    /// Thousandths of a retry always there (`min_retries_per_second × ttl × 1000`).
    reserve: i64,
    /// Nanoseconds per slot.
    slot: u64,
    /// The first use: slot 0 starts there.
    origin: OnceLock<Instant>,
    slots: [AtomicU64; SLOTS],
}

impl Ratio {
    /// The number of the slot of now.
    fn epoch(&self) -> u32 {
        let now = now();
        let origin = *self.origin.get_or_init(|| now);
        let n = now.saturating_duration_since(origin).as_nanos() / u128::from(self.slot);
        // Wrapping: slots older than a ttl are told apart by the wrapping difference.
        #[allow(clippy::cast_possible_truncation, reason = "wrapping slot numbers")]
        let n = n as u32;
        n
    }

    /// Adds `amount` to the slot of now, emptying it first if it still counts an older tenth.
    fn add(&self, amount: i64) {
        let epoch = self.epoch();
        let s = epoch as usize % SLOTS;
        let _ = self.slots[s].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            let (e, v) = split(w);
            if e == epoch {
                Some(join(epoch, i64::from(v).saturating_add(amount)))
            } else if epoch.wrapping_sub(e) < 1 << 31 {
                Some(join(epoch, amount))
            } else {
                // The slot counts a newer tenth (this thread read the clock long ago): the
                // amount belongs to a tenth that is gone.
                None
            }
        });
    }

    /// The balance now, in thousandths of a retry: the reserve plus the slots of the last `ttl`.
    fn balance(&self) -> i64 {
        let epoch = self.epoch();
        self.slots
            .iter()
            .map(|slot| split(slot.load(Ordering::Relaxed)))
            .filter(|(e, _)| epoch.wrapping_sub(*e) < SLOTS_U32)
            .fold(self.reserve, |sum, (_, v)| sum.saturating_add(i64::from(v)))
    }

    /// A request was made: `ratio` of a retry is earned for the next `ttl`.
    pub(crate) fn deposit(&self) {
        if self.deposit > 0 {
            self.add(self.deposit);
        }
    }

    /// Pays for one retry, if the balance holds one.
    pub(crate) fn try_withdraw(&self) -> bool {
        if self.balance() >= MILLI {
            self.add(-MILLI);
            true
        } else {
            false
        }
    }

    /// Gives back one retry's payment (its attempt was not made).
    pub(crate) fn refund(&self) {
        self.add(MILLI);
    }

    /// Whole retries the balance holds now.
    pub(crate) fn available(&self) -> u32 {
        u32::try_from((self.balance() / MILLI).max(0)).unwrap_or(u32::MAX)
    }
}

/// A slot's word: its tenth's number and its balance.
#[allow(clippy::cast_possible_truncation, reason = "the two halves")]
fn split(word: u64) -> (u32, i32) {
    ((word >> 32) as u32, (word as u32).cast_signed())
}

/// `v` is clamped to what 32 bits hold.
fn join(epoch: u32, v: i64) -> u64 {
    let v = i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX });
    u64::from(epoch) << 32 | u64::from(v.cast_unsigned())
}

/// Builds the ratio kind of [`RetryBudget`](crate::RetryBudget) (see
/// [`RetryBudget::ratio`](crate::RetryBudget::ratio)): retries as a share of the requests made,
/// over a sliding `ttl`, plus a floor of retries per second.
///
/// ```
/// use std::time::Duration;
/// use reattempt::RetryBudget;
///
/// let budget = RetryBudget::ratio(0.2)
///     .min_retries_per_second(0.1)
///     .ttl(Duration::from_secs(10))
///     .build()
///     .unwrap();
/// assert_eq!(budget.available(), 1, "the floor: 0.1 a second over 10 s");
/// let err = RetryBudget::ratio(0.2).ttl(Duration::from_secs(61)).build().unwrap_err();
/// assert_eq!(err.field(), "ttl");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct RatioBudgetBuilder {
    ratio: f64,
    min_retries_per_second: f64,
    ttl: Duration,
}

impl RatioBudgetBuilder {
    pub(crate) fn new(ratio: f64) -> Self {
        RatioBudgetBuilder {
            ratio,
            min_retries_per_second: 0.0,
            ttl: Duration::from_secs(10),
        }
    }

    /// The share of the requests that may be retried (finite, 0 to 1000; Finagle's and tower's
    /// default 0.2: one retry per five requests). Every call deposits `ratio` of a retry when its
    /// first attempt ends (a success or not); each retry, and each hedge, withdraws one.
    pub fn ratio(mut self, ratio: f64) -> Self {
        self.ratio = ratio;
        self
    }

    /// Retries per second allowed beyond the ratio (finite, ≥ 0; default 0), for an instance
    /// that makes few requests. Held as a standing reserve of `min_retries_per_second × ttl`
    /// retries, **per instance**: a fleet of N instances may make N times that many retries a
    /// second on top of the ratio. Finagle's and tower's default is 10 a second, sized for one
    /// busy client; for a fleet of hundreds of small instances, 0.1 or 0.
    pub fn min_retries_per_second(mut self, per_second: f64) -> Self {
        self.min_retries_per_second = per_second;
        self
    }

    /// How long a deposit (and a withdrawal) counts (1 to 60 s, as Finagle and tower require;
    /// default 10 s), in ten slots.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The checks of [`build`](Self::build), and the state it makes the budget of.
    pub(crate) fn check(self) -> Result<Ratio, ConfigError> {
        if !(self.ratio.is_finite() && (0.0..=1000.0).contains(&self.ratio)) {
            return Err(ConfigError::OutOfRange {
                field: "ratio",
                rule: "a number from 0 to 1000",
            });
        }
        if !(self.min_retries_per_second.is_finite() && self.min_retries_per_second >= 0.0) {
            return Err(ConfigError::OutOfRange {
                field: "min_retries_per_second",
                rule: "a finite number ≥ 0",
            });
        }
        if !(Duration::from_secs(1)..=Duration::from_secs(60)).contains(&self.ttl) {
            return Err(ConfigError::OutOfRange {
                field: "ttl",
                rule: "from 1s to 60s",
            });
        }
        #[allow(
            clippy::cast_possible_truncation,
            reason = "at most 10^6 by the checks"
        )]
        let deposit = (self.ratio * 1000.0).round() as i64;
        #[allow(clippy::cast_possible_truncation, reason = "saturating")]
        let reserve =
            (self.min_retries_per_second * self.ttl.as_secs_f64() * 1000.0).round() as i64;
        if deposit == 0 && reserve < MILLI {
            return Err(ConfigError::OutOfRange {
                field: "ratio",
                rule: "above 0 unless `min_retries_per_second × ttl` is at least one retry",
            });
        }
        let slot = u64::try_from(self.ttl.as_nanos() / SLOTS as u128).unwrap_or(u64::MAX);
        Ok(Ratio {
            deposit,
            reserve,
            slot,
            origin: OnceLock::new(),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{ErrorClass, RetryBudget};

    fn tps(ttl_secs: u64, min_per_sec: f64, ratio: f64) -> RetryBudget {
        RetryBudget::ratio(ratio)
            .min_retries_per_second(min_per_sec)
            .ttl(Duration::from_secs(ttl_secs))
            .build()
            .unwrap()
    }

    fn withdraw(b: &RetryBudget) -> bool {
        b.try_withdraw_for(ErrorClass::Transient)
    }

    // tower's `tps_budget.rs` tests, ported.

    #[tokio::test(start_paused = true)]
    async fn tps_empty() {
        // tower: `TpsBudget::new(1s, 0, 1.0)` pays nothing before a deposit.
        let b = tps(1, 0.0, 1.0);
        assert!(!withdraw(&b));
    }

    #[tokio::test(start_paused = true)]
    async fn tps_leaky() {
        let b = tps(1, 0.0, 1.0);
        b.deposit();
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(!withdraw(&b), "the deposit is over a ttl old");
    }

    #[tokio::test(start_paused = true)]
    async fn tps_slots() {
        let b = tps(1, 0.0, 0.5);
        b.deposit();
        b.deposit();
        tokio::time::advance(Duration::from_millis(901)).await;
        assert!(withdraw(&b), "900 ms later, the deposits still count");

        // A blank slate.
        tokio::time::advance(Duration::from_millis(2001)).await;
        b.deposit();
        tokio::time::advance(Duration::from_millis(301)).await;
        b.deposit();
        tokio::time::advance(Duration::from_millis(801)).await;
        b.deposit();
        // The first deposit has expired; the second and third make one retry.
        assert!(withdraw(&b));
        assert!(!withdraw(&b));
    }

    #[tokio::test(start_paused = true)]
    async fn tps_reserve() {
        let b = tps(1, 5.0, 1.0);
        for _ in 0..5 {
            assert!(withdraw(&b));
        }
        assert!(!withdraw(&b));
    }

    // This crate's own.

    #[tokio::test(start_paused = true)]
    async fn retries_are_a_share_of_the_requests_plus_the_floor() {
        let b = tps(10, 0.1, 0.2);
        for _ in 0..100 {
            b.deposit();
        }
        let mut granted = 0;
        while withdraw(&b) {
            granted += 1;
        }
        assert_eq!(granted, 21, "20 % of 100, plus 0.1/s × 10 s");
        // A withdrawal ages out with the ttl: the floor comes back, the deposits go.
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(b.available(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refund_gives_a_retry_back_and_a_retried_success_does_not() {
        let b = tps(10, 0.0, 0.5);
        b.deposit();
        b.deposit();
        assert!(withdraw(&b));
        assert!(!withdraw(&b));
        b.refund_for(ErrorClass::Timeout);
        assert_eq!(b.available(), 1, "an attempt never made costs nothing");
        assert!(withdraw(&b));
        b.settle_retried_success(ErrorClass::Transient);
        assert_eq!(b.available(), 0, "a retry made stays paid for");
        assert_eq!(b.cost(ErrorClass::Timeout), 1, "every retry costs one");
    }

    #[test]
    fn bad_settings_name_their_field() {
        let field = |b: RatioBudgetBuilder| b.build().unwrap_err().field();
        assert_eq!(field(RetryBudget::ratio(-0.1)), "ratio");
        assert_eq!(field(RetryBudget::ratio(f64::NAN)), "ratio");
        assert_eq!(field(RetryBudget::ratio(1000.5)), "ratio");
        assert_eq!(
            field(RetryBudget::ratio(0.2).min_retries_per_second(-1.0)),
            "min_retries_per_second"
        );
        assert_eq!(
            field(RetryBudget::ratio(0.2).ttl(Duration::from_millis(999))),
            "ttl"
        );
        assert_eq!(field(RetryBudget::ratio(0.0)), "ratio", "never pays");
        assert!(
            RetryBudget::ratio(0.0)
                .min_retries_per_second(0.1)
                .build()
                .is_ok()
        );
    }
}
