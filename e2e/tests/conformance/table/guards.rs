//! Rows of the breaker and the budget, of cancellation, and of a spent deadline under a
//! breaker.

use super::*;

// The circuit breaker: each attempt is one call through it; a rejection is never retried, is
// not an attempt made, and refunds what the budget paid for it.

pub fn breaker_open_rejects() -> Scenario {
    Scenario::new("breaker_open_rejects")
        .breaker(Open, 1, 1)
        .budget(20, 20)
        .script([ok(1)])
        .returns(Err(Rejected))
        .events([rejected(1)])
        .breaker_after(S::Open, false)
        .budget_after(20)
}

/// Attempt 2's failure opens the breaker (threshold 2); the retry it paid for is rejected and
/// refunded: 20 − 5 − 5 + 5.
/// The breaker opens on the second failure and turns the retry away: the call ends with that
/// failure (the last real error), not the rejection, as a refused budget does.
pub fn breaker_opens_mid_call_refunds_the_retry() -> Scenario {
    Scenario::new("breaker_opens_mid_call_refunds_the_retry")
        .max_attempts(5)
        .breaker(Closed, 2, 1)
        .budget(20, 20)
        .script([err(1), err(2), ok(3)])
        .returns(Err(e(2)))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100), (e(2), 2, 200)])
        .events([
            retrying(1, 100),
            transition(S::Closed, S::Open),
            retrying(2, 200),
            rejected(3),
        ])
        .breaker_after(S::Open, false)
        .budget_after(15)
        .ends_at(300)
}

pub fn half_open_probe_success() -> Scenario {
    Scenario::new("half_open_probe_success")
        .breaker(HalfOpen, 1, 1)
        .script([ok(9)])
        .returns(Ok(9))
        .attempts([(0, 1)])
        .events([transition(S::HalfOpen, S::Closed)])
        .breaker_after(S::Closed, true)
}

/// The probe fails: open again; the retry is rejected, and the call ends with the probe's error.
pub fn half_open_probe_failure() -> Scenario {
    Scenario::new("half_open_probe_failure")
        .breaker(HalfOpen, 1, 1)
        .script([err(1), ok(2)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .on_retry([(e(1), 1, 100)])
        .events([
            transition(S::HalfOpen, S::Open),
            retrying(1, 100),
            rejected(2),
        ])
        .breaker_after(S::Open, false)
        .ends_at(100)
}

/// One of two probes succeeded: still half-open, a second probe may go.
pub fn half_open_two_probes_one_call() -> Scenario {
    Scenario::new("half_open_two_probes_one_call")
        .breaker(HalfOpen, 1, 2)
        .script([ok(4)])
        .returns(Ok(4))
        .attempts([(0, 1)])
        .breaker_after(S::HalfOpen, true)
}

pub fn expired_breaker_admits_a_probe() -> Scenario {
    Scenario::new("expired_breaker_admits_a_probe")
        .breaker(OpenExpired, 1, 1)
        .script([ok(5)])
        .returns(Ok(5))
        .attempts([(0, 1)])
        .events([
            transition(S::Open, S::HalfOpen),
            transition(S::HalfOpen, S::Closed),
        ])
        .breaker_after(S::Closed, true)
}

/// A timed-out attempt is the dependency's failure.
/// A rejected retry after timeouts ends the call with the last timeout.
pub fn timeouts_open_the_breaker() -> Scenario {
    Scenario::new("timeouts_open_the_breaker")
        .timeout(50)
        .breaker(Closed, 2, 1)
        .script([hang(), hang(), ok(1)])
        .returns(Err(TimedOut))
        .attempts([(0, 1), (150, 2)])
        .on_retry([(TimedOut, 1, 100), (TimedOut, 2, 200)])
        .events([
            retrying_as(1, 100, "timeout"),
            transition(S::Closed, S::Open),
            retrying_as(2, 200, "timeout"),
            rejected(3),
        ])
        .breaker_after(S::Open, false)
        .ends_at(400)
}

/// A non-retryable error means the dependency answered: a success for the breaker.
pub fn non_retryable_error_is_a_breaker_success() -> Scenario {
    Scenario::new("non_retryable_error_is_a_breaker_success")
        .breaker(Closed, 1, 1)
        .script([fatal(1)])
        .returns(Err(Fatal(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::NotRetryable)])
        .breaker_after(S::Closed, true)
}

// The retry budget (the AWS retry quota).

pub fn budget_exhausted_mid_call() -> Scenario {
    Scenario::new("budget_exhausted_mid_call")
        .max_attempts(5)
        .budget(10, 10)
        .script([err(1), err(2), err(3), err(4)])
        .returns(Err(e(3)))
        .attempts([(0, 1), (100, 2), (300, 3)])
        .on_retry([(e(1), 1, 100), (e(2), 2, 200)])
        .events([
            retrying(1, 100),
            retrying(2, 200),
            give_up(3, R::BudgetExhausted),
        ])
        .budget_after(0)
        .ends_at(300)
}

pub fn budget_refuses_the_first_retry() -> Scenario {
    Scenario::new("budget_refuses_the_first_retry")
        .budget(10, 0)
        .script([err(1)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::BudgetExhausted)])
        .budget_after(0)
}

/// Long polling (the AWS SDKs' 2026 mode, issue 37): the budget alone refuses the retry, and
/// the call returns its error once the retry's backoff (100 ms) is over; nothing is paid.
pub fn long_polling_waits_a_refused_retrys_backoff() -> Scenario {
    Scenario::new("long_polling_waits_a_refused_retrys_backoff")
        .long_polling()
        .budget(10, 0)
        .script([err(1)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::BudgetExhausted)])
        .budget_after(0)
        .ends_at(100)
}

/// Long polling never waits after the last attempt, nor after an error not retried.
pub fn long_polling_no_wait_when_not_refused_by_the_budget() -> Scenario {
    Scenario::new("long_polling_no_wait_when_not_refused_by_the_budget")
        .long_polling()
        .max_attempts(2)
        .budget(10, 10)
        .script([err(1), err(2)])
        .returns(Err(e(2)))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100), give_up(2, R::Exhausted)])
        .budget_after(5)
        .ends_at(100)
}

/// A retried success gets its last retry's cost back: 10 − 5 + 5.
pub fn budget_refund_on_retried_success() -> Scenario {
    Scenario::new("budget_refund_on_retried_success")
        .budget(20, 10)
        .script([err(1), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100)])
        .budget_after(10)
        .ends_at(100)
}

pub fn budget_deposit_on_first_try() -> Scenario {
    Scenario::new("budget_deposit_on_first_try")
        .budget(20, 10)
        .script([ok(1)])
        .returns(Ok(1))
        .attempts([(0, 1)])
        .budget_after(11)
}

/// 20 − 5 (after an error) − 10 (after a timeout) + 10 (the last retry's cost, a timeout's).
pub fn budget_timeout_cost_refunded() -> Scenario {
    Scenario::new("budget_timeout_cost_refunded")
        .timeout(50)
        .budget(20, 20)
        .script([err(1), hang(), ok(3)])
        .returns(Ok(3))
        .attempts([(0, 1), (100, 2), (350, 3)])
        .on_retry([(e(1), 1, 100), (TimedOut, 2, 200)])
        .events([retrying(1, 100), retrying_as(2, 200, "timeout")])
        .budget_after(15)
        .ends_at(350)
}

/// DESIGN: a retry costs `timeout_cost` after a timeout, "whether our timeout cut the attempt
/// or the error says it was one": 20 − 10.
pub fn error_saying_timeout_costs_timeout_cost() -> Scenario {
    let t1 = SaysTimeout {
        id: 1,
        retryable: true,
    };
    let t2 = SaysTimeout {
        id: 2,
        retryable: true,
    };
    Scenario::new("error_saying_timeout_costs_timeout_cost")
        .max_attempts(2)
        .budget(20, 20)
        .script([says_timeout(1, true), says_timeout(2, true)])
        .returns(Err(t2))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(t1, 1, 100)])
        .events([retrying_said_timeout(1, 100), give_up(2, R::Exhausted)])
        .budget_after(10)
        .ends_at(100)
}

/// `Guards::record`: a timed-out attempt is the dependency's failure whether or not the call
/// retries it (a dependency that hangs must open the breaker).
pub fn error_saying_timeout_opens_the_breaker() -> Scenario {
    Scenario::new("error_saying_timeout_opens_the_breaker")
        .breaker(Closed, 1, 1)
        .script([says_timeout(1, false)])
        .returns(Err(SaysTimeout {
            id: 1,
            retryable: false,
        }))
        .attempts([(0, 1)])
        .events([transition(S::Closed, S::Open), give_up(1, R::NotRetryable)])
        .breaker_after(S::Open, false)
}

// Cancellation: the call's future is dropped.

/// README: a probe that never reports back holds its half-open slot for `reset_timeout`.
pub fn cancelled_during_an_attempt_holds_the_probe() -> Scenario {
    Scenario::new("cancelled_during_an_attempt_holds_the_probe")
        .breaker(HalfOpen, 1, 1)
        .budget(20, 20)
        .script([ok(1).after(500)])
        .cancel_at(200)
        .cancelled()
        .attempts([(0, 1)])
        .breaker_after(S::HalfOpen, false)
        .budget_after(20)
        .ends_at(200)
}

/// README: a budget's tokens are spent when a retry is decided, before its sleep, so a call
/// dropped during that sleep has paid for a retry it did not make.
pub fn cancelled_during_a_sleep_keeps_the_payment() -> Scenario {
    Scenario::new("cancelled_during_a_sleep_keeps_the_payment")
        .breaker(Closed, 5, 1)
        .budget(20, 20)
        .script([err(1), ok(2)])
        .cancel_at(50)
        .cancelled()
        .attempts([(0, 1)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100)])
        .breaker_after(S::Closed, true)
        .budget_after(15)
        .ends_at(50)
}

pub fn cancelled_before_the_timeout() -> Scenario {
    Scenario::new("cancelled_before_the_timeout")
        .timeout(100)
        .script([hang()])
        .cancel_at(50)
        .cancelled()
        .attempts([(0, 1)])
        .ends_at(50)
}

// A spent deadline and a breaker. The engine's rule (`engine::steps`, `Engine::would_run`): the
// deadline is checked first (README, nested deadlines: such a call "ends with `Elapsed` without
// running its body"), so that an attempt that cannot be made leaves the breaker untouched: it
// takes no permit and moves no expired breaker to half-open. (The attribute once asked the
// breaker first.)

pub fn deadline_spent_with_open_breaker() -> Scenario {
    Scenario::new("deadline_spent_with_open_breaker")
        .timeout(50)
        .inherited(100, 100)
        .breaker(Open, 1, 1)
        .budget(20, 20)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .events([give_up(0, R::DeadlineReached)])
        .breaker_after(S::Open, false)
        .budget_after(20)
        .ends_at(100)
}

pub fn deadline_spent_with_expired_breaker() -> Scenario {
    Scenario::new("deadline_spent_with_expired_breaker")
        .timeout(50)
        .inherited(100, 100)
        .breaker(OpenExpired, 1, 1)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .events([give_up(0, R::DeadlineReached)])
        .breaker_after(S::HalfOpen, true)
        .ends_at(100)
}

pub fn deadline_spent_with_half_open_breaker() -> Scenario {
    Scenario::new("deadline_spent_with_half_open_breaker")
        .timeout(50)
        .inherited(100, 100)
        .breaker(HalfOpen, 1, 1)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .events([give_up(0, R::DeadlineReached)])
        .breaker_after(S::HalfOpen, true)
        .ends_at(100)
}

// `retry_if_ok`. `on_retry` is for errors only.

pub fn ok_retried_then_success() -> Scenario {
    Scenario::new("ok_retried_then_success")
        .script([ok_retry(1000), ok(5)])
        .returns(Ok(5))
        .attempts([(0, 1), (100, 2)])
        .events([retrying_ok(1, 100)])
        .ends_at(100)
}

/// When attempts run out the last `Ok` is returned.
pub fn ok_retried_until_exhausted() -> Scenario {
    Scenario::new("ok_retried_until_exhausted")
        .max_attempts(2)
        .script([ok_retry(1000), ok_retry(1001)])
        .returns(Ok(1001))
        .attempts([(0, 1), (100, 2)])
        .events([retrying_ok(1, 100), gave_up_ok(2, R::Exhausted)])
        .ends_at(100)
}

pub fn ok_retried_with_budget_refund() -> Scenario {
    Scenario::new("ok_retried_with_budget_refund")
        .budget(20, 10)
        .script([ok_retry(1000), ok(5)])
        .returns(Ok(5))
        .attempts([(0, 1), (100, 2)])
        .events([retrying_ok(1, 100)])
        .budget_after(10)
        .ends_at(100)
}
