//! Rows of results, attempts and sleeps: the outcome's kind, unknown outcomes, timeouts, server
//! hints, deadlines and retrying at one layer.

use super::*;

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
