//! The table: one fn per row. Unless a row says otherwise: 3 attempts, 100 ms ×2 (100, 200, 400
//! …) up to 10 s, no jitter, no timeout, no `max_elapsed`; a breaker's `reset_timeout` is 30 s;
//! a budget pays 5 per retry, 10 per retry after a timeout, and gets 1 back per first-try
//! success. Times are ms since the call began. Each expectation cites the rule it follows.

use reattempt::BreakerState as S;
use reattempt::GiveUpReason as R;

#[cfg(feature = "testing")]
use crate::expect::injected;
use crate::expect::{
    Closed, HalfOpen, Open, OpenExpired, Scenario, gave_up_ok, give_up, hedging, rejected,
    rejected_by, retrying, retrying_as, retrying_ok, retrying_said_timeout, retrying_with,
    transition,
};
use crate::model::{
    TestError, e, eh, err, fatal, hang, hinted, lost, ok, ok_retry, paced_err, says_timeout,
    throttled,
};

use TestError::{Fatal, Full, Rejected, SaysTimeout, Shed, TimedOut};

// Results, attempts, sleeps.

pub fn success_first_try() -> Scenario {
    Scenario::new("success_first_try")
        .script([ok(1)])
        .returns(Ok(1))
        .attempts([(0, 1)])
}

pub fn success_after_retries() -> Scenario {
    Scenario::new("success_after_retries")
        .max_attempts(4)
        .script([err(1), err(2), ok(7)])
        .returns(Ok(7))
        .attempts([(0, 1), (100, 2), (300, 3)])
        .on_retry([(e(1), 1, 100), (e(2), 2, 200)])
        .events([retrying(1, 100), retrying(2, 200)])
        .ends_at(300)
}

pub fn exhausted() -> Scenario {
    Scenario::new("exhausted")
        .script([err(1), err(2), err(3)])
        .returns(Err(e(3)))
        .attempts([(0, 1), (100, 2), (300, 3)])
        .on_retry([(e(1), 1, 100), (e(2), 2, 200)])
        .events([retrying(1, 100), retrying(2, 200), give_up(3, R::Exhausted)])
        .ends_at(300)
}

/// `max_attempts = 1`: no retry was made, so the give-up is DEBUG.
pub fn single_attempt_policy() -> Scenario {
    Scenario::new("single_attempt_policy")
        .max_attempts(1)
        .script([err(1)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::Exhausted)])
}

pub fn non_retryable_first() -> Scenario {
    Scenario::new("non_retryable_first")
        .script([fatal(1)])
        .returns(Err(Fatal(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::NotRetryable)])
}

pub fn non_retryable_after_a_retry() -> Scenario {
    Scenario::new("non_retryable_after_a_retry")
        .script([err(1), fatal(2)])
        .returns(Err(Fatal(2)))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100), give_up(2, R::NotRetryable)])
        .ends_at(100)
}

// Unknown outcomes: an attempt that may have acted is repeated by the crate's judgement only on
// a call that says it is safe to repeat; it ends a call that is not, with its own reason, and
// counts as the dependency's failure.

pub fn unknown_outcome_not_repeated() -> Scenario {
    Scenario::new("unknown_outcome_not_repeated")
        .idempotent(false)
        .script([lost(1), ok(3)])
        .returns(Err(TestError::Lost(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::UnknownOutcome)])
        .ends_at(0)
}

pub fn unknown_outcome_repeated_when_idempotent() -> Scenario {
    Scenario::new("unknown_outcome_repeated_when_idempotent")
        .idempotent(true)
        .script([lost(1), ok(3)])
        .returns(Ok(3))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(TestError::Lost(1), 1, 100)])
        .events([retrying_with(1, 100, "transient", "unknown")])
        .ends_at(100)
}

// Timeouts: the attempt is dropped and counts as a failure that is retried.

pub fn timeout_then_success() -> Scenario {
    Scenario::new("timeout_then_success")
        .timeout(50)
        .script([hang(), ok(3)])
        .returns(Ok(3))
        .attempts([(0, 1), (150, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([retrying_as(1, 100, "timeout")])
        .ends_at(150)
}

pub fn timeout_exhausted() -> Scenario {
    Scenario::new("timeout_exhausted")
        .max_attempts(2)
        .timeout(50)
        .script([hang(), hang()])
        .returns(Err(TimedOut))
        .attempts([(0, 1), (150, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([retrying_as(1, 100, "timeout"), give_up(2, R::Exhausted)])
        .ends_at(200)
}

pub fn slow_attempt_within_timeout() -> Scenario {
    Scenario::new("slow_attempt_within_timeout")
        .timeout(100)
        .script([ok(5).after(60)])
        .returns(Ok(5))
        .attempts([(0, 1)])
        .ends_at(60)
}

/// An attempt that answers at the very instant of its limit is not cut: the attempt is polled
/// before its timer, as tokio's own `Timeout` does.
pub fn attempt_ending_at_its_timeout() -> Scenario {
    Scenario::new("attempt_ending_at_its_timeout")
        .timeout(100)
        .script([ok(5).after(100)])
        .returns(Ok(5))
        .attempts([(0, 1)])
        .ends_at(100)
}

pub fn slow_attempt_cut() -> Scenario {
    Scenario::new("slow_attempt_cut")
        .timeout(100)
        .script([ok(5).after(150), ok(6)])
        .returns(Ok(6))
        .attempts([(0, 1), (200, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([retrying_as(1, 100, "timeout")])
        .ends_at(200)
}

// Server hints: a floor under the computed delay; beyond max_delay or the deadline, the end.

pub fn hint_below_delay() -> Scenario {
    Scenario::new("hint_below_delay")
        .script([hinted(1, 30), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(eh(1, 30), 1, 100)])
        .events([retrying(1, 100)])
        .ends_at(100)
}

pub fn hint_above_delay() -> Scenario {
    Scenario::new("hint_above_delay")
        .max_delay(1000)
        .script([hinted(1, 700), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (700, 2)])
        .on_retry([(eh(1, 700), 1, 700)])
        .events([retrying(1, 700)])
        .ends_at(700)
}

pub fn hint_beyond_max_delay() -> Scenario {
    Scenario::new("hint_beyond_max_delay")
        .max_delay(500)
        .script([hinted(1, 600)])
        .returns(Err(eh(1, 600)))
        .attempts([(0, 1)])
        .events([give_up(1, R::RetryAfterTooLong)])
}

/// At 100 ms the hint (950 ms, above the computed 200) would wake at 1050 ≥ the 1000 ms
/// deadline: the hint is to blame.
pub fn hint_beyond_max_elapsed() -> Scenario {
    Scenario::new("hint_beyond_max_elapsed")
        .max_delay(5000)
        .max_elapsed(1000)
        .script([err(1), hinted(2, 950)])
        .returns(Err(eh(2, 950)))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100), give_up(2, R::RetryAfterTooLong)])
        .ends_at(100)
}

// Deadlines: no sleep starts that would end at or past max_elapsed; timeouts are clipped to it.

/// At 300 ms the next sleep (400) would end past 350.
pub fn max_elapsed_reached() -> Scenario {
    Scenario::new("max_elapsed_reached")
        .max_attempts(10)
        .max_elapsed(350)
        .script([err(1), err(2), err(3), err(4)])
        .returns(Err(e(3)))
        .attempts([(0, 1), (100, 2), (300, 3)])
        .on_retry([(e(1), 1, 100), (e(2), 2, 200)])
        .events([
            retrying(1, 100),
            retrying(2, 200),
            give_up(3, R::DeadlineReached),
        ])
        .ends_at(300)
}

/// Attempt 2 starts at 400 with 100 ms left: its 300 ms timeout is clipped to 100.
pub fn max_elapsed_clips_timeout() -> Scenario {
    Scenario::new("max_elapsed_clips_timeout")
        .max_attempts(5)
        .timeout(300)
        .max_elapsed(500)
        .script([hang(), hang()])
        .returns(Err(TimedOut))
        .attempts([(0, 1), (400, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([
            retrying_as(1, 100, "timeout"),
            give_up(2, R::DeadlineReached),
        ])
        .ends_at(500)
}

/// README, nested deadlines: a call with a `timeout` whose caller's deadline is spent ends with
/// `Elapsed` without running its body; reported by the attempts made (0), not counted.
pub fn deadline_spent_on_entry() -> Scenario {
    Scenario::new("deadline_spent_on_entry")
        .timeout(50)
        .inherited(100, 100)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .events([give_up(0, R::DeadlineReached)])
        .ends_at(100)
}

/// Without a `timeout` the call makes its first attempt (a call tries once) and no retry.
pub fn deadline_spent_on_entry_without_timeout() -> Scenario {
    Scenario::new("deadline_spent_on_entry_without_timeout")
        .inherited(100, 100)
        .script([err(1)])
        .returns(Err(e(1)))
        .attempts([(100, 1)])
        .events([give_up(1, R::DeadlineReached)])
        .ends_at(100)
}

/// The caller's 250 ms bound the sleeps: at 100 ms a 200 ms sleep would end past it.
pub fn inherited_deadline_bounds_sleeps() -> Scenario {
    Scenario::new("inherited_deadline_bounds_sleeps")
        .max_attempts(10)
        .inherited(250, 0)
        .script([err(1), err(2), err(3)])
        .returns(Err(e(2)))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100), give_up(2, R::DeadlineReached)])
        .ends_at(100)
}

/// The caller's 250 ms clip nothing of a 200 ms timeout; then a 100 ms sleep would end past it.
pub fn inherited_deadline_clips_timeout() -> Scenario {
    Scenario::new("inherited_deadline_clips_timeout")
        .timeout(200)
        .inherited(250, 0)
        .script([hang(), hang()])
        .returns(Err(TimedOut))
        .attempts([(0, 1)])
        .events([give_up(1, R::DeadlineReached)])
        .ends_at(200)
}

// Retrying at one layer (`one_layer`; README, "Retry at one layer"): a call nested in an attempt
// of a call that has attempts left makes one attempt and leaves the retrying to it; on the outer
// call's last attempt it retries normally.

/// The outer attempt is 1 of 3: the failure goes back to the outer call after one attempt, no
/// sleep; a give-up that is the rule working, at DEBUG.
pub fn one_layer_defers_to_an_outer_call_with_attempts_left() -> Scenario {
    Scenario::new("one_layer_defers_to_an_outer_call_with_attempts_left")
        .one_layer()
        .nested_in(3)
        .script([err(1), ok(2)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::OuterRetries)])
        .ends_at(0)
}

/// The outer attempt is its call's last (1 of 1): the nested call retries as if it were alone.
pub fn one_layer_retries_on_the_outer_calls_last_attempt() -> Scenario {
    Scenario::new("one_layer_retries_on_the_outer_calls_last_attempt")
        .one_layer()
        .nested_in(1)
        .script([err(1), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100)])
        .ends_at(100)
}

/// Without `one_layer` the nested call retries whatever the outer call has left.
pub fn without_one_layer_a_nested_call_retries() -> Scenario {
    Scenario::new("without_one_layer_a_nested_call_retries")
        .nested_in(3)
        .script([err(1), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100)])
        .ends_at(100)
}

/// A non-retryable error ends the call as it would anyway: the rule changes only retries.
pub fn one_layer_non_retryable_is_not_a_deferral() -> Scenario {
    Scenario::new("one_layer_non_retryable_is_not_a_deferral")
        .one_layer()
        .nested_in(3)
        .script([fatal(1)])
        .returns(Err(Fatal(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::NotRetryable)])
        .ends_at(0)
}

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

// Hedging (`hedge_after`, a fixed delay): attempts overlap; `max_attempts` counts the copies; the
// first accepted answer wins and the others are dropped; a hedge is paid from the budget like a
// retry (issue 15; `steps::start_alongside`, `steps::decide_copy`).

/// The first attempt is slow: after 50 ms the second starts alongside it and answers first.
pub fn hedge_slow_attempt() -> Scenario {
    Scenario::new("hedge_slow_attempt")
        .hedge_after(50)
        .script([ok(1).after(1000), ok(2).after(10)])
        .returns(Ok(2))
        .attempts([(0, 1), (50, 2)])
        .events([hedging(2)])
        .ends_at(60)
}

/// An answer within `hedge_after`: no hedge.
pub fn hedge_not_needed() -> Scenario {
    Scenario::new("hedge_not_needed")
        .hedge_after(50)
        .script([ok(1).after(20)])
        .returns(Ok(1))
        .attempts([(0, 1)])
        .ends_at(20)
}

/// Each hedge costs `retry_cost` (5): the budget pays the first, refuses the second (no event:
/// the copies in flight go on), and a call that hedged deposits nothing.
pub fn hedge_paid_by_the_budget() -> Scenario {
    Scenario::new("hedge_paid_by_the_budget")
        .hedge_after(20)
        .budget(100, 5)
        .script([ok(1).after(100), ok(2).after(100)])
        .returns(Ok(1))
        .attempts([(0, 1), (20, 2)])
        .events([hedging(2)])
        .budget_after(0)
        .ends_at(100)
}

// The adaptive throttle (`throttle`, K = 1 here): each attempt (retries included) is a request
// it may shed, with probability (requests − K × accepts) / (requests + 1) over its window; a
// shed attempt is not made, and the call ends at once with `E::from(Throttled)`, never retried
// (`steps::admit`). The throttle's draws are seeded, so that a row sheds deterministically.

/// A throttle that counted 999 refused requests sheds with probability 0.999: the first attempt
/// is shed, nothing is sent; the rejection is reported as the breaker's is.
pub fn throttle_sheds_the_first_attempt() -> Scenario {
    Scenario::new("throttle_sheds_the_first_attempt")
        .throttle(999, 1)
        .script([ok(1)])
        .returns(Err(Shed))
        .events([rejected_by(1, R::Throttled)])
        .throttle_after(1000, 0)
}

/// A fresh throttle lets the first attempt through (nothing counted yet); its retryable error
/// is a refusal, so the retry is shed with probability 1/2, and is (seed 5: its first draw is
/// below 1/2).
/// A shed retry ends the call with the last real error.
pub fn throttle_sheds_a_retry() -> Scenario {
    Scenario::new("throttle_sheds_a_retry")
        .throttle(0, 5)
        .script([err(1), ok(2)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100), rejected_by(2, R::Throttled)])
        .throttle_after(2, 0)
        .ends_at(100)
}

/// An answered attempt is an accept: the throttle counts one request, one accept.
pub fn throttle_hears_an_accepted_attempt() -> Scenario {
    Scenario::new("throttle_hears_an_accepted_attempt")
        .throttle(0, 3)
        .script([ok(4)])
        .returns(Ok(4))
        .attempts([(0, 1)])
        .throttle_after(1, 1)
}

// The bulkhead (`bulkhead`, one slot here, which another call holds): a call takes its slot
// before its first attempt and holds it to its end; when none is free (for `max_wait`, if set)
// nothing is sent and the call ends at once with `E::from(BulkheadFull)`, never retried.

/// No slot, no wait: turned away at once, no attempt made.
pub fn bulkhead_full_turns_the_call_away() -> Scenario {
    Scenario::new("bulkhead_full_turns_the_call_away")
        .bulkhead(None, Some(1000))
        .script([ok(1)])
        .returns(Err(Full))
        .events([rejected_by(1, R::BulkheadFull)])
        .bulkhead_after(0)
}

/// The slot comes free at 40 ms, within the 100 ms `max_wait`: the first attempt starts then.
pub fn bulkhead_waits_for_a_slot() -> Scenario {
    Scenario::new("bulkhead_waits_for_a_slot")
        .bulkhead(Some(100), Some(40))
        .script([ok(1)])
        .returns(Ok(1))
        .attempts([(40, 1)])
        .bulkhead_after(0)
        .ends_at(40)
}

/// The slot is held past the 100 ms `max_wait`: the call is turned away when the wait ends.
pub fn bulkhead_wait_runs_out() -> Scenario {
    Scenario::new("bulkhead_wait_runs_out")
        .bulkhead(Some(100), Some(300))
        .script([ok(1)])
        .returns(Err(Full))
        .events([rejected_by(1, R::BulkheadFull)])
        .bulkhead_after(0)
        .ends_at(100)
}

// Hedging with the other rules: each copy has its own timeout and passes the throttle.

/// Each copy is cut by its own timeout: the first at 100 ms (attempts are used up, but the
/// hedge may still answer: the call waits), the hedge at 130 ms, which ends the call.
pub fn hedge_copies_cut_by_their_timeouts() -> Scenario {
    Scenario::new("hedge_copies_cut_by_their_timeouts")
        .max_attempts(2)
        .timeout(100)
        .hedge_after(30)
        .script([hang(), hang()])
        .returns(Err(TimedOut))
        .attempts([(0, 1), (30, 2)])
        .events([hedging(2), give_up(2, R::Exhausted)])
        .ends_at(130)
}

/// The throttle is asked for the hedge as for any attempt: after the first request (no answer
/// yet) it sheds the hedge with probability 1/2, and does (seed 5); no hedge follows a shed one,
/// and the first copy's answer is the call's.
pub fn hedge_shed_by_the_throttle() -> Scenario {
    Scenario::new("hedge_shed_by_the_throttle")
        .hedge_after(50)
        .throttle(0, 5)
        .script([ok(1).after(300), ok(2)])
        .returns(Ok(1))
        .attempts([(0, 1)])
        .throttle_after(2, 1)
        .ends_at(300)
}

/// A hedged call's retry turned away by the breaker that its first copy's failure opened: the
/// call ends with that failure, as an unhedged call does (`half_open_probe_failure`).
pub fn hedged_retry_rejected_by_the_breaker() -> Scenario {
    Scenario::new("hedged_retry_rejected_by_the_breaker")
        .hedge_after(50)
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

/// A hedged call's retry shed by the throttle ends with the last real error.
pub fn hedged_retry_shed_by_the_throttle() -> Scenario {
    Scenario::new("hedged_retry_shed_by_the_throttle")
        .hedge_after(50)
        .throttle(0, 5)
        .script([err(1), ok(2)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .on_retry([(e(1), 1, 100)])
        .events([retrying(1, 100), rejected_by(2, R::Throttled)])
        .throttle_after(2, 0)
        .ends_at(100)
}

/// A hedged `one_layer` call nested in an attempt of a call with attempts left makes one
/// attempt: no hedge starts beside it (a hedge is an attempt), and its failure is left to the
/// outer call.
pub fn one_layer_hedged_call_makes_one_attempt() -> Scenario {
    Scenario::new("one_layer_hedged_call_makes_one_attempt")
        .hedge_after(50)
        .one_layer()
        .nested_in(3)
        .script([err(1).after(1000), ok(2).after(10)])
        .returns(Err(e(1)))
        .attempts([(0, 1)])
        .events([give_up(1, R::OuterRetries)])
        .ends_at(1000)
}

/// A throttling error's retry grows from `throttling_delay` (1 s), a transient one's from
/// `delay` (100 ms at the first retry, 200 ms at the second), and each is paid its class's cost:
/// 2 tokens after throttling, 5 after the transient error; the call's success gives back the
/// last retry's cost.
pub fn throttling_retry_has_its_own_delay_and_cost() -> Scenario {
    Scenario::new("throttling_retry_has_its_own_delay_and_cost")
        .throttling_delay(1000)
        .budget(100, 100)
        .throttling_cost(2)
        .script([throttled(1), err(2), ok(3)])
        .returns(Ok(3))
        .attempts([(0, 1), (1000, 2), (1200, 3)])
        .on_retry([(TestError::Throttled(1), 1, 1000), (e(2), 2, 200)])
        .events([retrying_as(1, 1000, "throttling"), retrying(2, 200)])
        .budget_after(98)
        .ends_at(1200)
}

/// A throttling error without `throttling_delay` waits `delay`, as any retry: the class changes
/// nothing unless a setting gives it its own delay or cost.
pub fn throttling_without_its_settings_is_a_retry_like_any() -> Scenario {
    Scenario::new("throttling_without_its_settings_is_a_retry_like_any")
        .budget(100, 100)
        .script([throttled(1), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (100, 2)])
        .on_retry([(TestError::Throttled(1), 1, 100)])
        .events([retrying_as(1, 100, "throttling")])
        .budget_after(100)
        .ends_at(100)
}

/// `delay_for` chooses the delay of a retry in place of the schedule's (100 ms): 30 ms.
pub fn delay_for_replaces_the_schedule() -> Scenario {
    Scenario::new("delay_for_replaces_the_schedule")
        .script([paced_err(1, 30, None), ok(2)])
        .returns(Ok(2))
        .attempts([(0, 1), (30, 2)])
        .on_retry([(
            TestError::Paced {
                id: 1,
                ms: 30,
                hint_ms: None,
            },
            1,
            30,
        )])
        .events([retrying(1, 30)])
        .ends_at(30)
}

/// A chosen delay past `max_delay` (10 s) is cut to it; a server's hint is still a floor under a
/// chosen delay (a 30 ms choice with a 70 ms hint waits 70 ms).
pub fn delay_for_within_max_delay_and_above_the_hint() -> Scenario {
    Scenario::new("delay_for_within_max_delay_and_above_the_hint")
        .script([
            paced_err(1, 50_000, None),
            paced_err(2, 30, Some(70)),
            ok(3),
        ])
        .returns(Ok(3))
        .attempts([(0, 1), (10_000, 2), (10_070, 3)])
        .on_retry([
            (
                TestError::Paced {
                    id: 1,
                    ms: 50_000,
                    hint_ms: None,
                },
                1,
                10_000,
            ),
            (
                TestError::Paced {
                    id: 2,
                    ms: 30,
                    hint_ms: Some(70),
                },
                2,
                70,
            ),
        ])
        .events([retrying(1, 10_000), retrying(2, 70)])
        .ends_at(10_070)
}

// Fault injection (feature `testing`, `testing::FaultInjection`): attempt `a` (1-based) of the
// policy's call `k` (0-based, in the order calls first draw) draws `u = SplitMix64(seed,
// k · 2^26 + a)`; every row's call is its policy's first (`k` = 0), so attempt `a` draws at `a`.
// Below `rate` it is an injected error (the body is
// not polled: after the latency, if any, the attempt fails with the driver's timeout
// conversion, a timeout-class failure retried as one), below `rate + latency_rate` an attempt
// made after the latency, which counts against its `timeout`. Each fault is counted when its
// attempt's outcome is decided. The draws of attempts 1, 2, 3 of seed 7: 0.017, 0.901, 0.583;
// of seed 0: 0.432, 0.026, 0.971.

/// Seed 7, rate 0.5: the first attempt draws 0.017 (an injected error, failed at once with
/// `TimedOut`, its body never run), the second 0.901 (untouched).
#[cfg(feature = "testing")]
pub fn injected_error_then_success() -> Scenario {
    Scenario::new("injected_error_then_success")
        .timeout(50)
        .inject_faults(0.5, None, 0.0, 7)
        .script([ok(1)])
        .returns(Ok(1))
        .attempts([(100, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([injected(1, "error"), retrying_as(1, 100, "timeout")])
        .ends_at(100)
}

/// Rate 1: every attempt is an injected error, until the attempts run out; the body never runs.
#[cfg(feature = "testing")]
pub fn injected_errors_until_exhausted() -> Scenario {
    Scenario::new("injected_errors_until_exhausted")
        .timeout(50)
        .inject_faults(1.0, None, 0.0, 4)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .attempts([])
        .on_retry([(TimedOut, 1, 100), (TimedOut, 2, 200)])
        .events([
            injected(1, "error"),
            retrying_as(1, 100, "timeout"),
            injected(2, "error"),
            retrying_as(2, 200, "timeout"),
            injected(3, "error"),
            give_up(3, R::Exhausted),
        ])
        .ends_at(300)
}

/// Every attempt is made 30 ms late (`latency_rate` 1), under a 50 ms timeout fixed when it
/// began: the first body starts at 30 and needs 30 more, so the attempt is cut at 50; the retry
/// starts at 150, its body at 180, and answers at once.
#[cfg(feature = "testing")]
pub fn injected_latency_cut_by_the_timeout() -> Scenario {
    Scenario::new("injected_latency_cut_by_the_timeout")
        .timeout(50)
        .inject_faults(0.0, Some(30), 1.0, 4)
        .script([ok(1).after(30), ok(2)])
        .returns(Ok(2))
        .attempts([(30, 1), (180, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([
            injected(1, "latency"),
            retrying_as(1, 100, "timeout"),
            injected(2, "latency"),
        ])
        .ends_at(180)
}

/// An injected latency longer than the timeout: the attempt times out at its limit, unpolled
/// (an injected error after a latency past the limit would too: the limit comes first).
#[cfg(feature = "testing")]
pub fn injected_latency_past_the_timeout() -> Scenario {
    Scenario::new("injected_latency_past_the_timeout")
        .max_attempts(2)
        .timeout(50)
        .inject_faults(0.0, Some(80), 1.0, 4)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .attempts([])
        .on_retry([(TimedOut, 1, 100)])
        .events([
            injected(1, "latency"),
            retrying_as(1, 100, "timeout"),
            injected(2, "latency"),
            give_up(2, R::Exhausted),
        ])
        .ends_at(200)
}

/// Each copy of a hedged call draws. Seed 7, rate 0.5, latency 50: the first copy (0.017) is an
/// injected error after 50 ms, never run; the hedge at 30 (0.901) runs and answers at 70. The
/// first copy's failure at 50 uses up the attempts while the hedge is in flight: the call waits
/// for it, as `hedge_copies_cut_by_their_timeouts` does.
#[cfg(feature = "testing")]
pub fn injected_error_in_a_hedged_call() -> Scenario {
    Scenario::new("injected_error_in_a_hedged_call")
        .max_attempts(2)
        .hedge_after(30)
        .inject_faults(0.5, Some(50), 0.0, 7)
        .script([ok(2).after(40)])
        .returns(Ok(2))
        .attempts([(30, 2)])
        .events([hedging(2), injected(1, "error")])
        .ends_at(70)
}

/// The hedge draws too. Seed 0, rate 0.2: the first copy (0.432) runs; the hedge at 30 (0.026)
/// is an injected error at once, never run; the first copy answers at 100.
#[cfg(feature = "testing")]
pub fn injected_error_in_a_hedge() -> Scenario {
    Scenario::new("injected_error_in_a_hedge")
        .max_attempts(2)
        .hedge_after(30)
        .inject_faults(0.2, None, 0.0, 0)
        .script([ok(1).after(100)])
        .returns(Ok(1))
        .attempts([(0, 1)])
        .events([hedging(2), injected(2, "error")])
        .ends_at(100)
}
