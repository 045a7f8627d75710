//! Rows where attempts overlap or wait their turn: hedging, the adaptive throttle, the
//! bulkhead, and hedging with the other rules.

use super::*;

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
