//! Guards shared by many calls: the circuit breaker, which stops calls to a failing dependency,
//! and the retry budget, which caps how many retries all calls together may make; and
//! [`Guards`], what one attempt holds of them.

pub(crate) mod breaker;
pub(crate) mod budget;

use breaker::{CircuitBreaker, Permit};
use budget::RetryBudget;

/// The breaker permit an attempt was made under, and the budget its retry is paid from.
///
/// ```
/// use retry_runtime::{CircuitBreaker, RetryBudget};
/// use retry_runtime::__private::Guards;
///
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let budget = RetryBudget::builder().build().unwrap();
/// let permit = breaker.try_acquire().ok();
/// let guards = Guards::NONE.breaker(&breaker, permit).budget(&budget);
/// # let _ = guards;
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub struct Guards<'b> {
    breaker: Option<(&'b CircuitBreaker, Option<Permit>)>,
    budget: Option<&'b RetryBudget>,
}

impl<'b> Guards<'b> {
    /// Neither breaker nor budget.
    pub const NONE: Guards<'static> = Guards {
        breaker: None,
        budget: None,
    };

    /// The attempt went through `breaker` under `permit`; `None` means the breaker rejected it.
    ///
    /// A rejected attempt is never made: the call ends at once with the rejection (the caller,
    /// or `#[recover]`, receives `E::from(BreakerOpen)`, as Resilience4j's
    /// `CallNotPermittedException` reaches a Spring `@Recover`), it is never retried, and if the
    /// budget had paid for it as a retry, those tokens are refunded: an attempt never made costs
    /// nothing.
    #[inline]
    pub fn breaker(self, breaker: &'b CircuitBreaker, permit: Option<Permit>) -> Self {
        Guards {
            breaker: Some((breaker, permit)),
            ..self
        }
    }

    /// Retries are paid from `budget`, and a success pays back into it (a retried call's last
    /// retry is refunded; a first-try success deposits `success_deposit`).
    #[inline]
    pub fn budget(self, budget: &'b RetryBudget) -> Self {
        Guards {
            budget: Some(budget),
            ..self
        }
    }

    /// The budget, if any.
    #[inline]
    pub(crate) fn budget_ref(&self) -> Option<&'b RetryBudget> {
        self.budget
    }

    /// Whether the breaker rejected the attempt.
    pub(crate) fn rejected(&self) -> bool {
        matches!(self.breaker, Some((_, None)))
    }

    /// Tells the breaker how the attempt went.
    #[inline]
    pub(crate) fn record(&self, succeeded: bool) {
        if let Some((breaker, Some(permit))) = self.breaker {
            breaker.record(permit, succeeded);
        }
    }

    /// Gives the breaker's permit back unused: the attempt was not made.
    pub(crate) fn release(&self) {
        if let Some((breaker, Some(permit))) = self.breaker {
            breaker.release(permit);
        }
    }
}
