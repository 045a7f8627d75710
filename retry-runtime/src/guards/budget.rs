//! The retry budget (see [`RetryBudget`]).

use crate::sync::{AtomicU32, Ordering};

use crate::guards::ratio_budget::{Ratio, RatioBudgetBuilder};
use crate::{ConfigError, ErrorClass};

/// The retry budget: a token bucket shared by every call that names it, so that during an
/// outage the fleet's retries stop instead of multiplying the load (the AWS SDK's standard retry
/// quota, with its accounting).
///
/// - Each retry withdraws what its failure's class costs ([`ErrorClass`], from
///   [`Transient::class`](crate::Transient::class) through [`Hooks::class`](crate::Hooks::class)):
///   `retry_cost` tokens (5) after a transient error; `timeout_cost` (10) when the failed attempt
///   was a timeout (our own `timeout` cut it, or its error says it was one); `throttling_cost`
///   (by default `retry_cost`) when the server asked to slow down. [`RetryBudget::aws_2026`]
///   charges 14, 14 and 5, as the AWS SDKs' 2026 standard mode does.
/// - A call that succeeds after retrying gets its last retry's cost back (AWS:
///   `retry_quota.release(cost)`); a call that succeeds on its first attempt deposits
///   `success_deposit` (1). Deposits and refunds stop at `max_tokens`.
/// - When the bucket cannot pay for a retry, the call returns its last error instead of retrying.
/// - A retry that was paid for but whose attempt the circuit breaker then rejected is refunded:
///   an attempt never made costs nothing.
/// - An `Ok` value that `retry_if_ok` rejected is a failure: retrying it is paid like any retry,
///   and if it is returned once no retry is left, it deposits nothing (and the calls metric counts
///   the call as failed).
///
/// **Per instance.** Each process holds its own budget: a fleet of N instances together makes
/// N times the retries one bucket allows before it empties (N × `max_tokens` ÷ `retry_cost`
/// retries per incident: 100 for the default, so 200,000 for 2,000 instances), and a new
/// instance starts full. For a fleet, size the bucket for the instance (a small
/// [`max_tokens`](RetryBudgetBuilder::max_tokens), an
/// [`initial_tokens`](RetryBudgetBuilder::initial_tokens) near zero) or use the
/// [`ratio`](Self::ratio) kind, whose bound does not grow with the fleet; the guide's chapter
/// "At fleet scale" has the figures.
///
/// Lock-free: one atomic (the ratio kind: one per tenth of its `ttl`).
///
/// ```
/// use reattempt::RetryBudget;
///
/// let budget = RetryBudget::builder().max_tokens(20).retry_cost(5).build().unwrap();
/// assert!(budget.try_withdraw(false));
/// assert!(budget.try_withdraw(true), "a timeout costs twice retry_cost by default");
/// assert_eq!(budget.available(), 5);
/// assert!(!budget.try_withdraw(true), "the bucket cannot pay: nothing is taken");
/// budget.refund(false); // the retried call succeeded: its last retry's cost comes back
/// budget.deposit();     // another call succeeded on its first attempt
/// assert_eq!(budget.available(), 11);
/// ```
#[derive(Debug)]
pub struct RetryBudget {
    tokens: AtomicU32,
    max_tokens: u32,
    retry_cost: u32,
    timeout_cost: u32,
    throttling_cost: u32,
    success_deposit: u32,
    /// The ratio kind's state ([`RetryBudget::ratio`]); `None` for the token bucket.
    ratio: Option<Box<Ratio>>,
}

impl RetryBudget {
    /// A builder with the AWS SDK's defaults: 500 tokens, 5 per retry, 10 per retry after a
    /// timeout, 1 back per first-try success. The 500 tokens are a reserve **per instance**
    /// (100 retries each, however large the fleet): see the type's documentation.
    pub fn builder() -> RetryBudgetBuilder {
        RetryBudgetBuilder::default()
    }

    /// A builder with the AWS SDKs' standard retry quota before 2026, which is this crate's
    /// default ([`builder`](Self::builder), the same builder): 500 tokens, 5 per retry, 10 per
    /// retry after a timeout (twice `retry_cost`, at most the bucket), 5 after throttling
    /// (`retry_cost`), 1 back per first-try success. Each value can still be changed. The AWS
    /// SDKs hold one quota per client: the 500 tokens are a reserve **per instance**, so a fleet
    /// of N instances may retry N × 100 times into an outage ([`fleet`](Self::fleet) is sized
    /// for many instances).
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    /// let b = RetryBudget::aws_standard().build().unwrap();
    /// assert_eq!((b.available(), b.cost(ErrorClass::Transient), b.cost(ErrorClass::Timeout)), (500, 5, 10));
    /// ```
    pub fn aws_standard() -> RetryBudgetBuilder {
        RetryBudgetBuilder::default()
    }

    /// A builder with the AWS SDKs' 2026 standard mode retry quota (`AWS_NEW_RETRIES_2026`;
    /// aws-sdk-go-v2 #3400, aws-sdk-java-v2 #6987): 500 tokens, 14 per transient retry, 5 per
    /// throttling retry, timeouts no longer special (14), 1 back per first-try success. The 500
    /// tokens are a reserve **per instance**, as in [`aws_standard`](Self::aws_standard).
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    /// let b = RetryBudget::aws_2026().build().unwrap();
    /// assert_eq!(b.available(), 500);
    /// assert_eq!(b.cost(ErrorClass::Timeout), b.cost(ErrorClass::Transient));
    /// ```
    pub fn aws_2026() -> RetryBudgetBuilder {
        RetryBudgetBuilder::default()
            .max_tokens(500)
            .retry_cost(14)
            .timeout_cost(14)
            .throttling_cost(5)
            .success_deposit(1)
    }

    /// The AWS bucket sized for a fleet of many instances: 25 tokens (5 retries at 5), starting
    /// with 5 (one retry), 1 back per first-try success. An instance earns its reserve back from
    /// its own successes, so a long-running one still rides out a short burst of errors, while
    /// a fleet of N instances retries at most N × 5 times into an outage, and a new autoscaled
    /// instance adds one retry, not a hundred. In the fleet simulation (BENCHMARKS.md, "At fleet
    /// scale"), 2,000 instances sent 1.17 attempts per request through a 30 s outage with it,
    /// against 2.99 with [`aws_standard`](Self::aws_standard). Each value can still be changed.
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    /// let b = RetryBudget::fleet().build().unwrap();
    /// assert_eq!((b.available(), b.cost(ErrorClass::Transient)), (5, 5));
    /// assert!(b.try_withdraw_for(ErrorClass::Transient));
    /// assert!(!b.try_withdraw_for(ErrorClass::Transient), "a new instance pays one retry");
    /// ```
    pub fn fleet() -> RetryBudgetBuilder {
        RetryBudgetBuilder::default()
            .max_tokens(25)
            .initial_tokens(5)
            .retry_cost(5)
            .success_deposit(1)
    }

    /// A builder of the ratio kind (Finagle's `RetryBudget`, tower's `TpsBudget`): retries
    /// are at most `ratio` of the requests of the last [`ttl`](RatioBudgetBuilder::ttl)
    /// (default 10 s), plus [`min_retries_per_second`](RatioBudgetBuilder::min_retries_per_second)
    /// (default 0). Every call deposits `ratio` of a retry when its first attempt ends, whatever
    /// its result; every retry (and hedge) withdraws one, whatever its error's class; nothing
    /// is refunded when a retried call succeeds (the retry did load the dependency), only when
    /// a paid attempt is not made, and only while a withdrawal is still in the `ttl` window (a
    /// refund never outlives what it returns: after a sleep longer than `ttl` it gives nothing
    /// back). An attempt a guard turned away was not made, and deposits nothing. Its bound is a share of the traffic, so it does not grow
    /// with the number of instances: the fleet's retries stay near `ratio` of its requests
    /// plus N × the floor. It plugs in wherever a [`RetryBudget`] does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{ErrorClass, RetryBudget};
    ///
    /// let budget = RetryBudget::ratio(0.2)
    ///     .min_retries_per_second(0.1)
    ///     .ttl(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// for _ in 0..10 {
    ///     budget.deposit(); // ten calls made (the engine deposits for each)
    /// }
    /// assert_eq!(budget.available(), 3, "2 retries for 10 requests, 1 from the floor");
    /// assert!(budget.try_withdraw_for(ErrorClass::Timeout));
    /// assert_eq!(budget.available(), 2);
    /// ```
    pub fn ratio(ratio: f64) -> RatioBudgetBuilder {
        RatioBudgetBuilder::new(ratio)
    }

    /// Finagle's default budget, which tower's `TpsBudget::default()` copies: 20 % of the
    /// requests of the last 10 s, plus 10 retries a second. The floor is **per instance**:
    /// sized for one busy client, it lets a fleet of 2,000 instances that each send one request
    /// a second retry every failure (2.99 attempts per request through an outage, in the fleet
    /// simulation); for a fleet, lower it ([`ratio`](Self::ratio) with
    /// `min_retries_per_second(0.1)`). Each value can still be changed.
    ///
    /// ```
    /// use reattempt::RetryBudget;
    /// let b = RetryBudget::finagle().build().unwrap();
    /// assert_eq!(b.available(), 100, "10 a second over 10 s");
    /// ```
    pub fn finagle() -> RatioBudgetBuilder {
        RatioBudgetBuilder::new(0.2).min_retries_per_second(10.0)
    }

    /// Whether this is the ratio kind ([`ratio`](Self::ratio)) rather than the AWS bucket.
    ///
    /// ```
    /// use reattempt::RetryBudget;
    /// assert!(RetryBudget::finagle().build().unwrap().is_ratio());
    /// assert!(!RetryBudget::builder().build().unwrap().is_ratio());
    /// ```
    pub fn is_ratio(&self) -> bool {
        self.ratio.is_some()
    }

    /// The ratio kind, built by [`RatioBudgetBuilder::build`]: every retry costs 1.
    pub(crate) fn with_ratio(ratio: Ratio) -> RetryBudget {
        RetryBudget {
            tokens: AtomicU32::new(0),
            max_tokens: 1,
            retry_cost: 1,
            timeout_cost: 1,
            throttling_cost: 1,
            success_deposit: 0,
            ratio: Some(Box::new(ratio)),
        }
    }

    /// A call's first attempt ended, whatever its outcome (a success, a failure, a retry the
    /// hooks refused, a copy cancelled by a hedge's answer): the ratio kind counts the request.
    /// The engine calls it once per call (`steps::first_attempt_ended`); the bucket earns
    /// nothing here (a first-try success deposits through
    /// [`first_try_succeeded`](Self::first_try_succeeded)).
    #[inline]
    pub(crate) fn request_made(&self) {
        if let Some(ratio) = &self.ratio {
            ratio.deposit();
        }
    }

    /// A call succeeded on its first attempt: the bucket gets `success_deposit` back (AWS); the
    /// ratio kind has counted the request already ([`request_made`](Self::request_made)).
    #[inline]
    pub(crate) fn first_try_succeeded(&self) {
        if self.ratio.is_none() {
            self.put(self.success_deposit);
        }
    }

    /// A call that retried succeeded: the bucket refunds its last retry (AWS); the ratio kind
    /// keeps it (the retry was made).
    #[inline]
    pub(crate) fn settle_retried_success(&self, class: ErrorClass) {
        if self.ratio.is_none() {
            self.refund_for(class);
        }
    }

    /// Tokens in the bucket now (the ratio kind: whole retries it would pay for now).
    pub fn available(&self) -> u32 {
        if let Some(ratio) = &self.ratio {
            return ratio.available();
        }
        self.tokens.load(Ordering::Relaxed)
    }

    /// Pays for one retry (`timeout_cost` when the failed attempt timed out); `false`, taking
    /// nothing, when the bucket cannot pay. [`try_withdraw_for`](Self::try_withdraw_for) with
    /// [`ErrorClass::Timeout`] or [`ErrorClass::Transient`].
    pub fn try_withdraw(&self, after_timeout: bool) -> bool {
        self.try_withdraw_for(if after_timeout {
            ErrorClass::Timeout
        } else {
            ErrorClass::Transient
        })
    }

    /// Pays for one retry after an error of `class` (its cost: `retry_cost`, `timeout_cost` or
    /// `throttling_cost`); `false`, taking nothing, when the bucket cannot pay.
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    ///
    /// let budget = RetryBudget::aws_2026().max_tokens(20).build().unwrap();
    /// assert!(budget.try_withdraw_for(ErrorClass::Transient));
    /// assert_eq!(budget.available(), 6, "a transient retry costs 14");
    /// assert!(budget.try_withdraw_for(ErrorClass::Throttling));
    /// assert_eq!(budget.available(), 1, "a throttling retry costs 5");
    /// ```
    pub fn try_withdraw_for(&self, class: ErrorClass) -> bool {
        if let Some(ratio) = &self.ratio {
            return ratio.try_withdraw();
        }
        let cost = self.cost(class);
        self.tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                t.checked_sub(cost)
            })
            .is_ok()
    }

    /// Gives back what [`try_withdraw(after_timeout)`](Self::try_withdraw) took, up to
    /// `max_tokens`: a retried call succeeded (AWS refunds its last retry), or the retry's
    /// attempt was never made (the breaker rejected it).
    ///
    /// ```
    /// let budget = reattempt::RetryBudget::builder().max_tokens(10).build().unwrap();
    /// assert!(budget.try_withdraw(true));
    /// budget.refund(true);
    /// assert_eq!(budget.available(), 10);
    /// ```
    pub fn refund(&self, after_timeout: bool) {
        self.refund_for(if after_timeout {
            ErrorClass::Timeout
        } else {
            ErrorClass::Transient
        });
    }

    /// Gives back what [`try_withdraw_for(class)`](Self::try_withdraw_for) took, up to
    /// `max_tokens`. The ratio kind undoes the oldest withdrawal still in its `ttl` window, and
    /// gives nothing back when none is left there.
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    ///
    /// let budget = RetryBudget::aws_2026().build().unwrap();
    /// assert!(budget.try_withdraw_for(ErrorClass::Throttling));
    /// budget.refund_for(ErrorClass::Throttling);
    /// assert_eq!(budget.available(), 500);
    /// ```
    pub fn refund_for(&self, class: ErrorClass) {
        if let Some(ratio) = &self.ratio {
            return ratio.refund();
        }
        self.put(self.cost(class));
    }

    /// What a retry after an error of `class` costs.
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    ///
    /// let before = RetryBudget::builder().build().unwrap();
    /// assert_eq!([ErrorClass::Transient, ErrorClass::Timeout, ErrorClass::Throttling].map(|c| before.cost(c)), [5, 10, 5]);
    /// let after = RetryBudget::aws_2026().build().unwrap();
    /// assert_eq!([ErrorClass::Transient, ErrorClass::Timeout, ErrorClass::Throttling].map(|c| after.cost(c)), [14, 14, 5]);
    /// ```
    pub const fn cost(&self, class: ErrorClass) -> u32 {
        match class {
            ErrorClass::Transient => self.retry_cost,
            ErrorClass::Timeout => self.timeout_cost,
            ErrorClass::Throttling => self.throttling_cost,
        }
    }

    /// Puts `success_deposit` tokens back, up to `max_tokens` (a call succeeded on its first
    /// attempt). The ratio kind deposits `ratio` of a retry (a request was made).
    #[inline]
    pub fn deposit(&self) {
        if let Some(ratio) = &self.ratio {
            return ratio.deposit();
        }
        self.put(self.success_deposit);
    }

    #[inline]
    fn put(&self, n: u32) {
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t < self.max_tokens).then(|| t.saturating_add(n).min(self.max_tokens))
            });
    }
}

impl RatioBudgetBuilder {
    /// Checks the settings and makes the budget.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `ratio` (not finite, negative or above 1000),
    /// `min_retries_per_second` (not finite or negative), `ttl` (outside 1 to 60 s), or `ratio`
    /// again when the budget could never pay for a retry (no ratio, and a floor below one retry
    /// per `ttl`).
    pub fn build(self) -> Result<RetryBudget, ConfigError> {
        self.check().map(RetryBudget::with_ratio)
    }
}

/// Builds a [`RetryBudget`].
///
/// ```
/// use reattempt::RetryBudget;
///
/// let budget = RetryBudget::builder().max_tokens(100).retry_cost(5).timeout_cost(10).build().unwrap();
/// assert_eq!(budget.available(), 100);
/// // A bucket that could never pay for one retry is refused.
/// let err = RetryBudget::builder().max_tokens(4).build().unwrap_err(); // retry_cost is 5
/// assert_eq!(err.field(), "max_tokens");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RetryBudgetBuilder {
    max_tokens: Option<u32>,
    retry_cost: Option<u32>,
    timeout_cost: Option<u32>,
    throttling_cost: Option<u32>,
    success_deposit: u32,
    initial_tokens: Option<u32>,
}

impl Default for RetryBudgetBuilder {
    fn default() -> Self {
        RetryBudgetBuilder {
            max_tokens: None,
            retry_cost: None,
            timeout_cost: None,
            throttling_cost: None,
            success_deposit: 1,
            initial_tokens: None,
        }
    }
}

impl RetryBudgetBuilder {
    /// The bucket's size, and its content at the start unless
    /// [`initial_tokens`](Self::initial_tokens) says otherwise (≥ 1, and at least the costs;
    /// default 500).
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Tokens one retry costs (≥ 1, ≤ `max_tokens`; default 5).
    pub fn retry_cost(mut self, n: u32) -> Self {
        self.retry_cost = Some(n);
        self
    }

    /// Tokens a retry after a timed-out attempt costs (≥ 1, ≤ `max_tokens`; default twice
    /// `retry_cost`, 10 as in the AWS SDKs, but at most `max_tokens`).
    pub fn timeout_cost(mut self, n: u32) -> Self {
        self.timeout_cost = Some(n);
        self
    }

    /// Tokens a retry after a throttling error costs (≥ 1, ≤ `max_tokens`; default
    /// `retry_cost`). The AWS SDKs' 2026 standard mode charges 5, against 14 for a transient
    /// retry: a server that asks the client to slow down is answered with fewer tokens spent, so
    /// more retries remain for it.
    pub fn throttling_cost(mut self, n: u32) -> Self {
        self.throttling_cost = Some(n);
        self
    }

    /// Tokens each call that succeeds on its first attempt puts back (default 1; 0 makes the
    /// budget a fixed allowance, apart from the refunds of retried calls that succeed).
    pub fn success_deposit(mut self, n: u32) -> Self {
        self.success_deposit = n;
        self
    }

    /// The bucket's content at the start (≤ `max_tokens`; default `max_tokens`: full). Deposits
    /// and refunds still stop at `max_tokens`. The AWS SDKs' own tests start their quota at 0,
    /// 14, 20 or 30 tokens (aws-sdk-go-v2's `retry2026_test.go` `initialTokens`, smithy-rs's
    /// `TokenBucket::new(0)`); a service starting cold can start low and earn its retries.
    ///
    /// ```
    /// use reattempt::{ErrorClass, RetryBudget};
    ///
    /// let budget = RetryBudget::aws_2026().initial_tokens(14).build().unwrap();
    /// assert!(budget.try_withdraw_for(ErrorClass::Transient));
    /// assert!(!budget.try_withdraw_for(ErrorClass::Transient), "14 tokens pay one retry");
    /// let err = RetryBudget::builder().max_tokens(10).initial_tokens(11).build().unwrap_err();
    /// assert_eq!(err.field(), "initial_tokens");
    /// ```
    pub fn initial_tokens(mut self, n: u32) -> Self {
        self.initial_tokens = Some(n);
        self
    }

    /// Checks the settings and makes the budget, full (or holding `initial_tokens`).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field at fault, including a bucket that could never pay for
    /// one retry (`max_tokens` below `retry_cost` or `timeout_cost`): the field named is the cost,
    /// unless only `max_tokens` was set.
    pub fn build(self) -> Result<RetryBudget, ConfigError> {
        let max_tokens = self.max_tokens.unwrap_or(500);
        let retry_cost = self.retry_cost.unwrap_or(5);
        let timeout_cost = self
            .timeout_cost
            .unwrap_or_else(|| retry_cost.saturating_mul(2).min(max_tokens));
        let throttling_cost = self.throttling_cost.unwrap_or(retry_cost);
        for (field, n) in [
            ("max_tokens", max_tokens),
            ("retry_cost", retry_cost),
            ("timeout_cost", timeout_cost),
            ("throttling_cost", throttling_cost),
        ] {
            if n == 0 {
                return Err(ConfigError::Zero { field });
            }
        }
        for (field, cost, set) in [
            ("retry_cost", retry_cost, self.retry_cost.is_some()),
            ("timeout_cost", timeout_cost, self.timeout_cost.is_some()),
            (
                "throttling_cost",
                throttling_cost,
                self.throttling_cost.is_some(),
            ),
        ] {
            if cost > max_tokens {
                return Err(ConfigError::Unpayable {
                    field: if set || self.max_tokens.is_none() {
                        field
                    } else {
                        "max_tokens"
                    },
                    cost,
                    max_tokens,
                });
            }
        }
        let initial = self.initial_tokens.unwrap_or(max_tokens);
        if initial > max_tokens {
            return Err(ConfigError::OutOfRange {
                field: "initial_tokens",
                rule: "at most `max_tokens`",
            });
        }
        Ok(RetryBudget {
            tokens: AtomicU32::new(initial),
            max_tokens,
            retry_cost,
            timeout_cost,
            throttling_cost,
            success_deposit: self.success_deposit,
            ratio: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn withdrawals_and_deposits_are_exact_and_capped() {
        let b = RetryBudget::builder()
            .max_tokens(12)
            .retry_cost(5)
            .timeout_cost(10)
            .success_deposit(4)
            .build()
            .unwrap();
        assert!(b.try_withdraw(true));
        assert_eq!(b.available(), 2);
        assert!(!b.try_withdraw(false));
        assert_eq!(b.available(), 2, "a refusal takes nothing");
        b.deposit();
        b.deposit();
        b.deposit();
        assert_eq!(b.available(), 12, "capped at max_tokens");
    }

    #[test]
    fn concurrent_withdrawals_never_overdraw() {
        let b = RetryBudget::builder()
            .max_tokens(500)
            .retry_cost(5)
            .build()
            .unwrap();
        let granted = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    // Fewer rounds under Miri (still more withdrawals than the 100 it holds).
                    for _ in 0..if cfg!(miri) { 20 } else { 1000 } {
                        if b.try_withdraw(false) {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(granted.load(Ordering::Relaxed), 100);
        assert_eq!(b.available(), 0);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let field = |b: RetryBudgetBuilder| b.build().unwrap_err().field();
        assert_eq!(field(RetryBudget::builder().max_tokens(0)), "max_tokens");
        assert_eq!(field(RetryBudget::builder().retry_cost(0)), "retry_cost");
        assert_eq!(
            field(RetryBudget::builder().timeout_cost(0)),
            "timeout_cost"
        );
    }

    #[test]
    fn the_starting_level_is_settable_and_the_ceiling_stays() {
        let b = RetryBudget::aws_2026().initial_tokens(0).build().unwrap();
        assert_eq!(b.available(), 0);
        assert!(!b.try_withdraw_for(ErrorClass::Throttling));
        for _ in 0..600 {
            b.deposit();
        }
        assert_eq!(b.available(), 500, "deposits stop at max_tokens");
        let err = RetryBudget::builder()
            .max_tokens(10)
            .initial_tokens(11)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `initial_tokens`: must be at most `max_tokens`"
        );
    }

    #[test]
    fn a_bucket_that_could_never_pay_names_the_field() {
        let field = |b: RetryBudgetBuilder| b.build().unwrap_err().field();
        let b = RetryBudget::builder();
        assert_eq!(
            field(b.max_tokens(4)),
            "max_tokens",
            "below the default retry_cost"
        );
        assert_eq!(field(b.retry_cost(501)), "retry_cost");
        assert_eq!(field(b.timeout_cost(501)), "timeout_cost");
        assert_eq!(field(b.max_tokens(9).timeout_cost(10)), "timeout_cost");
        assert_eq!(field(b.max_tokens(10).retry_cost(11)), "retry_cost");
        assert_eq!(field(b.max_tokens(10).timeout_cost(11)), "timeout_cost");
        let err = b.max_tokens(10).timeout_cost(11).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `timeout_cost`: 11 tokens exceed `max_tokens` (10): the bucket could never pay for a retry"
        );
        // The default timeout cost, twice retry_cost, stops at the bucket's size.
        let small = b.max_tokens(7).build().unwrap();
        assert!(small.try_withdraw(true));
        assert_eq!(small.available(), 0);
        assert!(b.retry_cost(300).build().is_ok());
        let max = b
            .max_tokens(u32::MAX)
            .retry_cost(u32::MAX)
            .timeout_cost(u32::MAX)
            .success_deposit(u32::MAX)
            .build()
            .unwrap();
        assert!(max.try_withdraw(true));
        assert_eq!(max.available(), 0);
        max.deposit();
        max.deposit();
        assert_eq!(max.available(), u32::MAX);
        max.refund(false);
        assert_eq!(max.available(), u32::MAX);
        assert!(
            b.retry_cost(u32::MAX).max_tokens(u32::MAX).build().is_ok(),
            "the default timeout cost saturates"
        );
    }

    #[test]
    fn the_fleet_bucket_starts_with_one_retry_and_earns_up_to_five() {
        let b = RetryBudget::fleet().build().unwrap();
        assert!(b.try_withdraw_for(ErrorClass::Transient));
        assert!(
            !b.try_withdraw_for(ErrorClass::Transient),
            "a new instance: one retry"
        );
        for _ in 0..100 {
            b.deposit();
        }
        let mut retries = 0;
        while b.try_withdraw_for(ErrorClass::Transient) {
            retries += 1;
        }
        assert_eq!(retries, 5, "the reserve per instance");
        assert!(!b.is_ratio());
    }
}
