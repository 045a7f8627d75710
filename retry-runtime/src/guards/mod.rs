//! Guards shared by many calls: the circuit breaker, which stops calls to a failing dependency,
//! and the retry budget, which caps how many retries all calls together may make; and
//! [`Guards`], what one attempt holds of them.

pub(crate) mod breaker;
pub(crate) mod budget;

use breaker::{CircuitBreaker, Permit};
use budget::RetryBudget;

/// What the circuit breaker said about an attempt, asked before it began.
///
/// ```
/// use retry_runtime::CircuitBreaker;
/// use retry_runtime::__private::Admission;
///
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let admission = Admission::from(breaker.try_acquire());
/// assert!(!admission.rejected());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead, under this permit.
    Admitted(Permit),
    /// The breaker is open: the attempt is not made, and the call ends with the rejection.
    Rejected,
    /// The breaker was not asked: the attempt cannot be made anyway (no time remains), and ends
    /// the call as `DeadlineReached` without taking a permit.
    NotAsked,
}

impl Admission {
    /// Whether the breaker rejected the attempt.
    #[inline]
    pub fn rejected(&self) -> bool {
        matches!(self, Admission::Rejected)
    }
}

impl<E> From<Result<Permit, E>> for Admission {
    fn from(acquired: Result<Permit, E>) -> Self {
        match acquired {
            Ok(permit) => Admission::Admitted(permit),
            Err(_) => Admission::Rejected,
        }
    }
}

/// The breaker permit an attempt was made under, and the budget its retry is paid from.
///
/// ```
/// use retry_runtime::{CircuitBreaker, RetryBudget};
/// use retry_runtime::__private::{Admission, Guards};
///
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let budget = RetryBudget::builder().build().unwrap();
/// let admission = Admission::from(breaker.try_acquire());
/// let guards = Guards::NONE.breaker(&breaker, admission).budget(&budget);
/// # let _ = guards;
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub struct Guards<'b> {
    breaker: Option<(&'b CircuitBreaker, Admission)>,
    budget: Option<&'b RetryBudget>,
}

impl<'b> Guards<'b> {
    /// Neither breaker nor budget.
    pub const NONE: Guards<'static> = Guards {
        breaker: None,
        budget: None,
    };

    /// The attempt went through `breaker`, which said `admission`.
    ///
    /// A rejected attempt is never made: the call ends at once with the rejection (the caller,
    /// or `#[recover]`, receives `E::from(BreakerOpen)`, as Resilience4j's
    /// `CallNotPermittedException` reaches a Spring `@Recover`), it is never retried, and if the
    /// budget had paid for it as a retry, those tokens are refunded: an attempt never made costs
    /// nothing.
    #[inline]
    pub fn breaker(self, breaker: &'b CircuitBreaker, admission: Admission) -> Self {
        Guards {
            breaker: Some((breaker, admission)),
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
        matches!(self.breaker, Some((_, Admission::Rejected)))
    }

    /// Tells the breaker how the attempt went.
    #[inline]
    pub(crate) fn record(&self, succeeded: bool) {
        if let Some((breaker, Admission::Admitted(permit))) = self.breaker {
            breaker.record(permit, succeeded);
        }
    }

    /// Gives the breaker's permit back unused: the attempt was not made.
    pub(crate) fn release(&self) {
        if let Some((breaker, Admission::Admitted(permit))) = self.breaker {
            breaker.release(permit);
        }
    }
}
