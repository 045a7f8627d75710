//! What a call pays its retry budget and gets back: the AWS SDKs' retry quota, settled per call.

use super::engine::Engine;
use super::word::{PAID_HEDGE, class_paid};
use crate::ErrorClass;
use crate::guards::budget::RetryBudget;

impl Engine<'_> {
    /// Settles a call that succeeded with its budget, as the AWS SDKs' retry quota does: a call
    /// that retried gets its last retry's cost back; a first-try success deposits
    /// `success_deposit` (see [`after_failure_within`](Self::after_failure_within)).
    #[inline]
    pub fn succeeded(&self, budget: &RetryBudget) {
        match self.paid() {
            0 => budget.first_try_succeeded(),
            PAID_HEDGE => {}
            paid => budget.settle_retried_success(class_paid(paid)),
        }
        self.set_paid(0);
    }

    /// Pays `budget` for a hedge (its `retry_cost`), if it can: `false` when it cannot, and then
    /// no hedge starts. Unlike a retry's, a hedge's cost is not paid back when the call succeeds
    /// (its copy did load the dependency), and a call that hedged deposits nothing: hedges are
    /// funded by calls that succeed at once, so they stop when the dependency is saturated.
    /// A retry paid before it stays paid for: its cost still comes back when the call succeeds.
    /// If the hedge is then not made, give its cost back with the budget's `refund(false)`.
    ///
    /// ```
    /// use reattempt::{RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    /// let engine = Engine::new(&policy);
    /// assert!(engine.pay_hedge(&budget));
    /// engine.succeeded(&budget);
    /// assert_eq!(budget.available(), 95, "a hedge is not refunded, and no deposit");
    /// ```
    pub fn pay_hedge(&self, budget: &RetryBudget) -> bool {
        if budget.try_withdraw_for(ErrorClass::Transient) {
            // The last retry's payment, if any, is kept: it is refunded on success.
            if self.paid() == 0 {
                self.set_paid(PAID_HEDGE);
            }
            true
        } else {
            false
        }
    }

    /// Whether the call's last payment was for a hedge (see [`pay_hedge`](Self::pay_hedge)).
    #[inline]
    pub(crate) fn paid_hedge(&self) -> bool {
        self.paid() == PAID_HEDGE
    }

    /// Forgets the payment [`pay_hedge`](Self::pay_hedge) noted for a hedge that was not made
    /// after all (its cost given back): unless an earlier hedge was made (`hedged_before`), the
    /// call has not hedged, and a first-try success still deposits.
    #[inline]
    pub(crate) fn hedge_not_made(&self, hedged_before: bool) {
        if !hedged_before && self.paid() == PAID_HEDGE {
            self.set_paid(0);
        }
    }

    /// Notes that the call has hedged (a copy overlapped another) once what it paid for its
    /// last retry is settled: its success then deposits nothing (see [`pay_hedge`](Self::pay_hedge)).
    #[inline]
    pub(crate) fn mark_hedged(&self) {
        if self.paid() == 0 {
            self.set_paid(PAID_HEDGE);
        }
    }

    /// Gives back what the budget was paid for the retry about to be made, when its attempt is
    /// not made after all (the circuit breaker rejected it): an attempt never made costs nothing.
    pub fn unmade(&self, budget: &RetryBudget) {
        if let paid @ 1.. = self.paid() {
            budget.refund_for(class_paid(paid));
        }
        self.set_paid(0);
    }

    /// As [`unmade`](Self::unmade), in a call that hedged (copies in flight): the retry's payment
    /// comes back, and the call stays one that hedged, which deposits nothing when it succeeds
    /// (see [`pay_hedge`](Self::pay_hedge)).
    pub fn unmade_while_hedged(&self, budget: &RetryBudget) {
        self.unmade(budget);
        self.set_paid(PAID_HEDGE);
    }
}
