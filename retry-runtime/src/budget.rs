//! The retry budget: a token bucket shared by every call that names it, so that during an
//! outage the fleet's retries stop instead of multiplying the load (the AWS SDK's retry quota).
//!
//! Each retry withdraws `retry_cost` tokens (`timeout_cost` after a timed-out attempt); each
//! successful call deposits `success_deposit`, up to `max_tokens`. When the bucket cannot pay for
//! a retry, the call returns its last error instead of retrying. Lock-free: one atomic.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::ConfigError;

/// A token bucket that retries draw from.
///
/// ```
/// use retry_runtime::RetryBudget;
///
/// let budget = RetryBudget::builder().max_tokens(10).retry_cost(5).build().unwrap();
/// assert!(budget.try_withdraw(false));
/// assert!(budget.try_withdraw(false));
/// assert!(!budget.try_withdraw(false), "10 tokens pay for exactly two retries");
/// budget.deposit();
/// assert_eq!(budget.available(), 1);
/// ```
#[derive(Debug)]
pub struct RetryBudget {
    tokens: AtomicU32,
    max_tokens: u32,
    retry_cost: u32,
    timeout_cost: u32,
    success_deposit: u32,
}

impl RetryBudget {
    /// A builder with the AWS SDK's defaults: 500 tokens, 5 per retry (also after a timeout),
    /// 1 back per success.
    pub fn builder() -> RetryBudgetBuilder {
        RetryBudgetBuilder::default()
    }

    /// Tokens in the bucket now.
    pub fn available(&self) -> u32 {
        self.tokens.load(Ordering::Relaxed)
    }

    /// Pays for one retry (`timeout_cost` when the failed attempt timed out); `false`, taking
    /// nothing, when the bucket cannot pay.
    pub fn try_withdraw(&self, after_timeout: bool) -> bool {
        let cost = if after_timeout {
            self.timeout_cost
        } else {
            self.retry_cost
        };
        self.tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                t.checked_sub(cost)
            })
            .is_ok()
    }

    /// Puts `success_deposit` tokens back, up to `max_tokens`.
    pub fn deposit(&self) {
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t < self.max_tokens)
                    .then(|| t.saturating_add(self.success_deposit).min(self.max_tokens))
            });
    }
}

/// Builds a [`RetryBudget`].
///
/// ```
/// use retry_runtime::RetryBudget;
///
/// let budget = RetryBudget::builder().max_tokens(100).retry_cost(5).timeout_cost(10).build().unwrap();
/// assert_eq!(budget.available(), 100);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RetryBudgetBuilder {
    max_tokens: u32,
    retry_cost: u32,
    timeout_cost: Option<u32>,
    success_deposit: u32,
}

impl Default for RetryBudgetBuilder {
    fn default() -> Self {
        RetryBudgetBuilder {
            max_tokens: 500,
            retry_cost: 5,
            timeout_cost: None,
            success_deposit: 1,
        }
    }
}

impl RetryBudgetBuilder {
    /// The bucket's size, and its content at the start (≥ 1; default 500).
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }

    /// Tokens one retry costs (≥ 1; default 5).
    pub fn retry_cost(mut self, n: u32) -> Self {
        self.retry_cost = n;
        self
    }

    /// Tokens a retry after a timed-out attempt costs (≥ 1; default `retry_cost`; AWS uses 10).
    pub fn timeout_cost(mut self, n: u32) -> Self {
        self.timeout_cost = Some(n);
        self
    }

    /// Tokens each successful call puts back (default 1; 0 makes the budget a fixed allowance).
    pub fn success_deposit(mut self, n: u32) -> Self {
        self.success_deposit = n;
        self
    }

    /// Checks the settings and makes the budget, full.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field at fault.
    pub fn build(self) -> Result<RetryBudget, ConfigError> {
        if self.max_tokens == 0 {
            return Err(ConfigError::Zero {
                field: "max_tokens",
            });
        }
        if self.retry_cost == 0 {
            return Err(ConfigError::Zero {
                field: "retry_cost",
            });
        }
        if self.timeout_cost == Some(0) {
            return Err(ConfigError::Zero {
                field: "timeout_cost",
            });
        }
        Ok(RetryBudget {
            tokens: AtomicU32::new(self.max_tokens),
            max_tokens: self.max_tokens,
            retry_cost: self.retry_cost,
            timeout_cost: self.timeout_cost.unwrap_or(self.retry_cost),
            success_deposit: self.success_deposit,
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
                    for _ in 0..1000 {
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
}
