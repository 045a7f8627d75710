//! Guards shared by many calls: the circuit breaker, which stops calls to a failing dependency;
//! the retry budget, which caps how many retries all calls together may make; the adaptive
//! throttle, which sheds requests locally when the dependency refuses many; the bulkhead, which
//! caps the calls in flight; gRFC A6's retry throttle, which stops a gRPC channel's retries and
//! hedges while too many attempts fail; and [`Guards`], what one attempt holds of them.

pub(crate) mod breaker;
pub(crate) mod budget;
pub(crate) mod bulkhead;
pub(crate) mod ratio_budget;
pub(crate) mod retry_throttle;
pub(crate) mod throttle;

use breaker::{CircuitBreaker, Permit};
use budget::RetryBudget;
use throttle::AdaptiveThrottle;

use crate::engine::give_up::GiveUpReason;

/// What the adaptive throttle said about an attempt, asked before it began (after the breaker).
///
/// ```
/// use reattempt::AdaptiveThrottle;
/// use retry_runtime::__private::ThrottleAdmission;
///
/// let throttle = AdaptiveThrottle::builder().build().unwrap();
/// assert_eq!(ThrottleAdmission::from(throttle.try_acquire()), ThrottleAdmission::Admitted);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleAdmission {
    /// Send it; the throttle hears how it went.
    Admitted,
    /// Shed locally: the attempt is not made, and the call ends with the rejection.
    Rejected,
    /// Not asked: the attempt cannot be made anyway (no time left, or the breaker rejected it).
    NotAsked,
}

impl ThrottleAdmission {
    /// Whether the throttle rejected the attempt.
    #[inline]
    pub fn rejected(&self) -> bool {
        matches!(self, ThrottleAdmission::Rejected)
    }
}

impl<E> From<Result<(), E>> for ThrottleAdmission {
    fn from(acquired: Result<(), E>) -> Self {
        match acquired {
            Ok(()) => ThrottleAdmission::Admitted,
            Err(_) => ThrottleAdmission::Rejected,
        }
    }
}

/// What the circuit breaker said about an attempt, asked before it began: admitted under a
/// [`Permit`] ([`Admission::Admitted`]), [`Admission::Rejected`], or [`Admission::NotAsked`].
///
/// One word, the permit's (a rejection and "not asked" are words no permit has), so that the
/// admission an attempt holds across its `.await` is one store, and recording a success one
/// comparison with the breaker's state word.
///
/// ```
/// use reattempt::CircuitBreaker;
/// use retry_runtime::__private::Admission;
///
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let admission = Admission::from(breaker.try_acquire());
/// assert!(!admission.rejected());
/// assert_eq!(admission, Admission::Admitted(admission.permit().unwrap()));
/// assert!(matches!(Admission::NotAsked, Admission::NotAsked));
/// assert_eq!(Admission::Rejected.permit(), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Admission(Permit);

#[allow(
    non_upper_case_globals,
    non_snake_case,
    reason = "named as the variants of the enum it was, so that `Admission::Rejected` still reads (and matches) as one"
)]
impl Admission {
    /// The breaker is open: the attempt is not made, and the call ends with the rejection.
    pub const Rejected: Admission = Admission(Permit::REJECTED);

    /// The breaker was not asked: the attempt cannot be made anyway (no time remains), and ends
    /// the call as `DeadlineReached` without taking a permit.
    pub const NotAsked: Admission = Admission(Permit::NOT_ASKED);

    /// Go ahead, under this permit.
    ///
    /// ```
    /// use reattempt::CircuitBreaker;
    /// use retry_runtime::__private::Admission;
    ///
    /// let breaker = CircuitBreaker::builder().build().unwrap();
    /// let permit = breaker.try_acquire().unwrap();
    /// assert_eq!(Admission::Admitted(permit).permit(), Some(permit));
    /// ```
    #[inline]
    pub const fn Admitted(permit: Permit) -> Admission {
        Admission(permit)
    }

    /// The permit, if the breaker admitted the attempt.
    #[inline]
    pub fn permit(self) -> Option<Permit> {
        self.0.is_permit().then_some(self.0)
    }

    /// Whether the breaker rejected the attempt.
    #[inline]
    pub fn rejected(&self) -> bool {
        *self == Admission::Rejected
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.permit() {
            Some(permit) => f.debug_tuple("Admitted").field(&permit).finish(),
            None if self.rejected() => f.write_str("Rejected"),
            None => f.write_str("NotAsked"),
        }
    }
}

impl<E> From<Result<Permit, E>> for Admission {
    #[inline]
    fn from(acquired: Result<Permit, E>) -> Self {
        match acquired {
            Ok(permit) => Admission::Admitted(permit),
            Err(_) => Admission::Rejected,
        }
    }
}

/// What a call's guards said about its next attempt, asked in the engine's order by
/// [`admit`](crate::__private::admit): the bulkhead (whether the call holds a slot), the time
/// left, the circuit breaker, the adaptive throttle. Either the attempt runs under these
/// admissions ([`rejection`](Self::rejection) is `None`), or it is not made and the call ends
/// with the rejection's reason (the driver turns it into the call's error). It holds no guard:
/// the driver names them again in [`Guards::admitted`] for `decide`.
///
/// ```
/// use reattempt::GiveUpReason;
/// use retry_runtime::__private::Admitted;
///
/// assert_eq!(Admitted::NOT_ASKED.rejection(), None);
/// assert_eq!(Admitted::FULL.rejection(), Some(GiveUpReason::BulkheadFull));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    full: bool,
    breaker: Admission,
    throttle: ThrottleAdmission,
}

impl Admitted {
    /// No guard was asked (none is set, or no time is left for the attempt).
    pub const NOT_ASKED: Admitted = Admitted {
        full: false,
        breaker: Admission::NotAsked,
        throttle: ThrottleAdmission::NotAsked,
    };

    /// The call's bulkhead had no slot for it: nothing else was asked.
    pub const FULL: Admitted = Admitted {
        full: true,
        ..Admitted::NOT_ASKED
    };

    /// What the breaker and the throttle said.
    #[inline]
    pub(crate) fn asked(breaker: Admission, throttle: ThrottleAdmission) -> Self {
        Admitted {
            full: false,
            breaker,
            throttle,
        }
    }

    /// What the circuit breaker said.
    #[inline]
    pub fn breaker(&self) -> Admission {
        self.breaker
    }

    /// What the adaptive throttle said.
    #[inline]
    pub fn throttle(&self) -> ThrottleAdmission {
        self.throttle
    }

    /// Which guard turned the attempt away, if one did: the bulkhead, the breaker, the
    /// throttle (`None`: run it).
    #[inline]
    pub fn rejection(&self) -> Option<GiveUpReason> {
        if self.full {
            Some(GiveUpReason::BulkheadFull)
        } else if let Admission::Rejected = self.breaker {
            Some(GiveUpReason::BreakerOpen)
        } else if let ThrottleAdmission::Rejected = self.throttle {
            Some(GiveUpReason::Throttled)
        } else {
            None
        }
    }
}

/// The breaker permit an attempt was made under, and the budget its retry is paid from.
///
/// ```
/// use reattempt::{CircuitBreaker, RetryBudget};
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
    throttle: Option<(&'b AdaptiveThrottle, ThrottleAdmission)>,
    bulkhead_full: bool,
}

impl<'b> Guards<'b> {
    /// Neither breaker nor budget.
    pub const NONE: Guards<'static> = Guards {
        breaker: None,
        budget: None,
        throttle: None,
        bulkhead_full: false,
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

    /// The attempt went through `throttle`, which said `admission`. A rejected attempt is
    /// never made: the call ends at once with `E::from(Throttled)`, as after a breaker's
    /// rejection. An admitted one tells the throttle whether the dependency accepted it.
    #[inline]
    pub fn throttle(self, throttle: &'b AdaptiveThrottle, admission: ThrottleAdmission) -> Self {
        Guards {
            throttle: Some((throttle, admission)),
            ..self
        }
    }

    /// The call's bulkhead had no slot for it: no attempt was made, and the call ends at once
    /// with `E::from(BulkheadFull)` (never retried; it reaches `#[recover]`).
    #[inline]
    pub fn bulkhead_full(self) -> Self {
        Guards {
            bulkhead_full: true,
            ..self
        }
    }

    /// The attempt went through `breaker` and `throttle` (those the call has), which said
    /// `admitted` (see [`admit`](crate::__private::admit)); with the bulkhead's answer.
    ///
    /// ```
    /// use reattempt::{AdaptiveThrottle, GiveUpReason};
    /// use retry_runtime::__private::{Admitted, Guards};
    ///
    /// let throttle = AdaptiveThrottle::builder().build().unwrap();
    /// let guards = Guards::NONE.admitted(None, Some(&throttle), Admitted::FULL);
    /// assert_eq!(guards.rejection(), Some(GiveUpReason::BulkheadFull));
    /// ```
    #[inline]
    pub fn admitted(
        self,
        breaker: Option<&'b CircuitBreaker>,
        throttle: Option<&'b AdaptiveThrottle>,
        admitted: Admitted,
    ) -> Self {
        Guards {
            breaker: breaker.map(|b| (b, admitted.breaker)),
            throttle: throttle.map(|t| (t, admitted.throttle)),
            bulkhead_full: admitted.full,
            ..self
        }
    }

    /// Which guard turned the attempt away, if one did: the bulkhead, the breaker, the
    /// throttle.
    ///
    /// ```
    /// use reattempt::GiveUpReason;
    /// use retry_runtime::__private::Guards;
    ///
    /// assert_eq!(Guards::NONE.rejection(), None);
    /// assert_eq!(Guards::NONE.bulkhead_full().rejection(), Some(GiveUpReason::BulkheadFull));
    /// ```
    #[inline]
    pub fn rejection(&self) -> Option<GiveUpReason> {
        if self.bulkhead_full {
            Some(GiveUpReason::BulkheadFull)
        } else if matches!(self.breaker, Some((_, Admission::Rejected))) {
            Some(GiveUpReason::BreakerOpen)
        } else if matches!(self.throttle, Some((_, ThrottleAdmission::Rejected))) {
            Some(GiveUpReason::Throttled)
        } else {
            None
        }
    }

    /// The budget, if any.
    #[inline]
    pub(crate) fn budget_ref(&self) -> Option<&'b RetryBudget> {
        self.budget
    }

    /// Tells the breaker and the throttle how the attempt went.
    #[inline]
    pub(crate) fn record(&self, succeeded: bool) {
        if let Some((breaker, admission)) = self.breaker {
            // No test of the admission here: the breaker ignores a word that is no permit, on
            // its path past the common case.
            breaker.record(admission.0, succeeded);
        }
        if let Some((throttle, ThrottleAdmission::Admitted)) = self.throttle {
            throttle.record(succeeded);
        }
    }

    /// A copy dropped before it answered (a hedged call's loser): the breaker's permit goes
    /// back unused, and the throttle counts it as accepted — the dependency did not refuse it —
    /// so that hedging against a healthy dependency never makes the throttle shed.
    pub(crate) fn cancelled(&self) {
        self.release();
        if let Some((throttle, ThrottleAdmission::Admitted)) = self.throttle {
            throttle.record(true);
        }
    }

    /// Gives the breaker's permit back unused: the attempt was not made.
    pub(crate) fn release(&self) {
        if let Some((breaker, admission)) = self.breaker
            && let Some(permit) = admission.permit()
        {
            breaker.release(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admission_is_one_word() {
        assert_eq!(size_of::<Permit>(), size_of::<u64>());
        assert_eq!(size_of::<Admission>(), size_of::<u64>());
    }

    #[tokio::test(start_paused = true)]
    async fn an_admission_without_a_permit_records_and_releases_nothing() {
        let breaker = CircuitBreaker::builder()
            .failure_threshold(1)
            .build()
            .unwrap();
        for admission in [Admission::Rejected, Admission::NotAsked] {
            assert_eq!(admission.permit(), None);
            let guards = Guards::NONE.breaker(&breaker, admission);
            guards.record(false);
            guards.release();
        }
        assert_eq!(breaker.state(), breaker::BreakerState::Closed);
        let admission = Admission::from(breaker.try_acquire());
        assert!(admission.permit().is_some() && !admission.rejected());
        Guards::NONE.breaker(&breaker, admission).record(false);
        assert_eq!(breaker.state(), breaker::BreakerState::Open);
        assert_eq!(Admission::from(breaker.try_acquire()), Admission::Rejected);
    }
}
