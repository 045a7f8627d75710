use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::Jitter;
use crate::engine::give_up::GiveUpReason;
use crate::guards::budget::RetryBudget;
use crate::schedule::policy::RetryPolicy;
use crate::{ErrorClass, HintMode};

const MS: Duration = Duration::from_millis(1);

fn policy(b: crate::RetryPolicyBuilder) -> RetryPolicy {
    b.jitter(Jitter::None).build().unwrap()
}

impl<'p> Engine<'p> {
    /// An engine whose clock, if the policy needs one, started at `now`.
    fn started(policy: &'p RetryPolicy, now: impl FnOnce() -> Instant) -> Self {
        let engine = Engine::new(policy);
        if policy.max_elapsed.is_some() {
            engine.start_or(now);
        }
        engine
    }
}

#[test]
fn retries_until_attempts_are_exhausted() {
    let p = policy(RetryPolicy::builder().max_attempts(3));
    let now = Instant::now();
    let mut e = Engine::started(&p, || unreachable!("no max_elapsed: no clock read"));
    let mut verdicts = vec![];
    for _ in 0..3 {
        e.begin_attempt();
        verdicts.push(e.after_failure(true, None, now));
    }
    assert_eq!(
        verdicts,
        [
            Decision::Retry(100 * MS),
            Decision::Retry(200 * MS),
            Decision::Stop(GiveUpReason::Exhausted)
        ]
    );
    assert_eq!(e.attempt(), 3);
}

#[test]
fn a_non_retryable_outcome_stops_at_once() {
    let p = policy(RetryPolicy::builder());
    let mut e = Engine::started(&p, Instant::now);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(false, Some(MS), Instant::now()),
        Decision::Stop(GiveUpReason::NotRetryable)
    );
}

#[test]
fn a_hint_is_a_floor_under_the_computed_delay() {
    let p = policy(RetryPolicy::builder().max_attempts(5).max_delay(1000 * MS));
    let mut e = Engine::started(&p, Instant::now);
    let now = Instant::now();
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, Some(700 * MS), now),
        Decision::Retry(700 * MS)
    );
    e.begin_attempt();
    // Zero, or a date in the past: at least the schedule's delay (retry 2: 200 ms).
    assert_eq!(
        e.after_failure(true, Some(Duration::ZERO), now),
        Decision::Retry(200 * MS)
    );
    e.begin_attempt();
    // The schedule went on counting under the hints: this is retry 3's delay.
    assert_eq!(e.after_failure(true, None, now), Decision::Retry(400 * MS));
    e.begin_attempt();
    // Exactly max_delay is allowed.
    assert_eq!(
        e.after_failure(true, Some(1000 * MS), now),
        Decision::Retry(1000 * MS)
    );
}

#[test]
fn a_hint_beyond_max_delay_ends_the_call() {
    let p = policy(RetryPolicy::builder().max_attempts(5).max_delay(1000 * MS));
    let mut e = Engine::started(&p, Instant::now);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(
            true,
            Some(1000 * MS + Duration::from_nanos(1)),
            Instant::now()
        ),
        Decision::Stop(GiveUpReason::RetryAfterTooLong)
    );
    let mut e = Engine::started(&p, Instant::now);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, Some(Duration::MAX), Instant::now()),
        Decision::Stop(GiveUpReason::RetryAfterTooLong)
    );
}

/// `HintMode::AWS_2026`: the hint clamped to [tᵢ, tᵢ + 5 s], `max_delay` not applied to it
/// (smithy-rs `standard.rs` `v2_1_retry_after_bounded_between_t_i_and_t_i_plus_5s`,
/// `v2_1_retry_after_below_t_i_uses_t_i`, `v2_1_retry_after_above_t_i_plus_5s_capped`).
#[test]
fn a_clamped_hint_stays_within_five_seconds_of_the_computed_delay() {
    let p = policy(
        RetryPolicy::builder()
            .max_attempts(10)
            .delay(50 * MS)
            .max_delay(Duration::from_secs(20))
            .hint_mode(HintMode::AWS_2026),
    );
    let now = Instant::now();
    let first = |hint: Duration| {
        let mut e = Engine::started(&p, || now);
        e.begin_attempt();
        e.after_failure(true, Some(hint), now)
    };
    assert_eq!(first(3000 * MS), Decision::Retry(3000 * MS));
    assert_eq!(first(10 * MS), Decision::Retry(50 * MS));
    assert_eq!(first(10_000 * MS), Decision::Retry(5050 * MS));
    // Beyond max_delay (the floor mode's give-up), and beyond what anything could wait.
    assert_eq!(first(Duration::from_secs(24)), Decision::Retry(5050 * MS));
    assert_eq!(first(Duration::MAX), Decision::Retry(5050 * MS));
    // Over a later retry's delay (retry 3: 200 ms).
    let mut e = Engine::started(&p, || now);
    for _ in 0..2 {
        e.begin_attempt();
        let _ = e.after_failure(true, None, now);
    }
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, Some(Duration::from_secs(60)), now),
        Decision::Retry(5200 * MS)
    );
    // The deadline still ends a wait that would outlast it, blaming the hint.
    let bounded = policy(
        RetryPolicy::builder()
            .delay(50 * MS)
            .max_elapsed(Duration::from_secs(2))
            .hint_mode(HintMode::AWS_2026),
    );
    let mut e = Engine::started(&bounded, || now);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, Some(Duration::from_secs(3)), now),
        Decision::Stop(GiveUpReason::RetryAfterTooLong)
    );
}

/// Long polling (botocore `test_sqs_triggers_long_polling_backoff_when_token_empty`, smithy-rs
/// `long_polling_backs_off_when_token_bucket_empty` and the `..._must_not_delay` cases): only a
/// retry the budget alone refuses leaves a wait, of the backoff it would have used.
#[test]
fn only_a_retry_refused_by_the_budget_alone_lingers() {
    let polling = policy(RetryPolicy::builder().max_attempts(2).long_polling(true));
    let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    let full = RetryBudget::builder().build().unwrap();
    let now = Instant::now();
    let mut e = Engine::started(&polling, || now);
    e.begin_attempt();
    assert_eq!(
        e.after_failure_within(true, None, now, None, Some(&empty)),
        Decision::Stop(GiveUpReason::BudgetExhausted)
    );
    assert_eq!(e.linger(), Some(now + 100 * MS));
    assert_eq!(e.linger(), None, "read once");
    // Not retryable; attempts exhausted; paid: no wait.
    let mut e = Engine::started(&polling, || now);
    e.begin_attempt();
    let _ = e.after_failure_within(false, None, now, None, Some(&empty));
    assert_eq!(e.linger(), None, "not retryable");
    assert!(matches!(
        e.after_failure_within(true, None, now, None, Some(&full)),
        Decision::Retry(_)
    ));
    assert_eq!(e.linger(), None, "paid");
    e.begin_attempt();
    assert_eq!(
        e.after_failure_within(true, None, now, None, Some(&empty)),
        Decision::Stop(GiveUpReason::Exhausted)
    );
    assert_eq!(e.linger(), None, "after the last attempt");
    // A throttling error waits the throttling backoff (smithy-rs
    // `long_polling_backoff_after_throttling_error_when_token_bucket_empty`: 1 s).
    let throttled = policy(
        RetryPolicy::builder()
            .delay(50 * MS)
            .throttling_delay(Duration::from_secs(1))
            .long_polling(true),
    );
    let mut e = Engine::started(&throttled, || now);
    e.begin_attempt();
    e.mark_class(ErrorClass::Throttling);
    let _ = e.after_failure_within(true, None, now, None, Some(&empty));
    assert_eq!(e.linger(), Some(now + Duration::from_secs(1)));
    // Without long polling, or alongside other copies, no wait; the last payment stays.
    let plain = policy(RetryPolicy::builder());
    let mut e = Engine::started(&plain, || now);
    e.begin_attempt();
    let _ = e.after_failure_within(true, None, now, None, Some(&empty));
    assert_eq!(e.linger(), None, "not a long-polling policy");
    let three = policy(RetryPolicy::builder().max_attempts(3).long_polling(true));
    let mut e = Engine::started(&three, || now);
    e.begin_attempt();
    let one = RetryBudget::builder().max_tokens(5).build().unwrap();
    assert!(matches!(
        e.after_failure_within(true, None, now, None, Some(&one)),
        Decision::Retry(_)
    ));
    e.begin_attempt();
    assert_eq!(
        e.after_failure_alongside(None, |_, _| None, now, None, Some(&one)),
        Decision::Stop(GiveUpReason::BudgetExhausted)
    );
    assert_eq!(e.linger(), None, "copies in flight: the call goes on");
    e.succeeded(&one);
    assert_eq!(one.available(), 5, "the paid retry is still refunded");
}

#[test]
fn a_hint_beyond_the_deadline_ends_the_call_and_says_so() {
    let p = policy(
        RetryPolicy::builder()
            .max_attempts(5)
            .max_delay(5000 * MS)
            .max_elapsed(1000 * MS),
    );
    let t0 = Instant::now();
    let mut e = Engine::started(&p, || t0);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, Some(999 * MS), t0),
        Decision::Retry(999 * MS),
        "ends one millisecond before the deadline"
    );
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, Some(1000 * MS), t0),
        Decision::Stop(GiveUpReason::RetryAfterTooLong),
        "ends exactly at the deadline"
    );
    // Without a hint, the same sleep past the deadline is the deadline's doing.
    let mut e = Engine::started(&p, || t0);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, None, t0 + 950 * MS),
        Decision::Stop(GiveUpReason::DeadlineReached)
    );
}

#[test]
fn no_sleep_starts_that_would_end_past_the_deadline() {
    let p = policy(
        RetryPolicy::builder()
            .max_attempts(10)
            .max_elapsed(1000 * MS),
    );
    let t0 = Instant::now();
    let mut e = Engine::started(&p, || t0);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, None, t0 + 100 * MS),
        Decision::Retry(100 * MS)
    );
    e.begin_attempt();
    // 800 ms + 200 ms ends exactly at the deadline: refused.
    assert_eq!(
        e.after_failure(true, None, t0 + 800 * MS),
        Decision::Stop(GiveUpReason::DeadlineReached)
    );
}

#[test]
fn a_sleep_may_end_one_nanosecond_before_the_deadline() {
    let p = policy(
        RetryPolicy::builder()
            .max_attempts(10)
            .timeout(500 * MS)
            .max_elapsed(1000 * MS),
    );
    let ns = Duration::from_nanos(1);
    let t0 = Instant::now();
    let mut e = Engine::started(&p, || t0);
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, None, t0 + 900 * MS - ns),
        Decision::Retry(100 * MS)
    );
    // It wakes one nanosecond before the deadline: that is all the next attempt gets.
    assert_eq!(e.attempt_timeout(|| t0 + 1000 * MS - ns), Some(ns));
    assert_eq!(e.attempt_timeout(|| t0 + 1000 * MS), Some(Duration::ZERO));
    e.begin_attempt();
    assert_eq!(
        e.after_failure(true, None, t0 + 800 * MS),
        Decision::Stop(GiveUpReason::DeadlineReached),
        "800 + 200 ms ends exactly at the deadline"
    );
}

#[test]
fn the_timeout_is_clipped_to_what_remains() {
    let p = policy(
        RetryPolicy::builder()
            .timeout(300 * MS)
            .max_elapsed(1000 * MS),
    );
    let t0 = Instant::now();
    let e = Engine::started(&p, || t0);
    assert_eq!(e.attempt_timeout(|| t0), Some(300 * MS));
    assert_eq!(e.attempt_timeout(|| t0 + 850 * MS), Some(150 * MS));
    assert_eq!(e.attempt_timeout(|| t0 + 2000 * MS), Some(Duration::ZERO));
    let untimed = policy(RetryPolicy::builder().max_elapsed(1000 * MS));
    assert_eq!(
        Engine::started(&untimed, || t0).attempt_timeout(|| t0),
        None
    );
}

#[test]
fn the_clock_starts_at_the_first_failure_without_max_elapsed() {
    let p = policy(RetryPolicy::builder());
    let t0 = Instant::now();
    let mut e = Engine::started(&p, || unreachable!());
    assert_eq!(e.deadline(), None);
    e.begin_attempt();
    let _ = e.after_failure(true, None, t0 + 5 * MS);
    assert_eq!(e.start_or(|| unreachable!()), t0 + 5 * MS);
}

#[test]
fn huge_limits_do_not_overflow() {
    let p = policy(
        RetryPolicy::builder()
            .max_attempts(RetryPolicy::MAX_ATTEMPTS)
            .max_delay(Duration::MAX)
            .max_elapsed(Duration::MAX)
            .multiplier(1e6),
    );
    let t0 = Instant::now();
    let mut e = Engine::started(&p, || t0);
    for _ in 0..100 {
        e.begin_attempt();
        assert!(matches!(
            e.after_failure(true, None, t0),
            Decision::Retry(_)
        ));
    }
}

#[test]
fn an_inherited_deadline_bounds_sleeps_and_timeouts() {
    let p = policy(RetryPolicy::builder().max_attempts(10).timeout(500 * MS));
    let t0 = Instant::now();
    let mut e = Engine::started(&p, || t0);
    let inherited = Some(t0 + 250 * MS);
    assert_eq!(e.attempt_timeout_within(|| t0, inherited), Some(250 * MS));
    e.begin_attempt();
    assert_eq!(
        e.after_failure_within(true, None, t0 + 100 * MS, inherited, None),
        Decision::Retry(100 * MS)
    );
    e.begin_attempt();
    assert_eq!(
        e.after_failure_within(true, None, t0 + 100 * MS, inherited, None),
        Decision::Stop(GiveUpReason::DeadlineReached),
        "100 + 200 ms ends past the inherited 250 ms"
    );
}

#[test]
fn a_retry_is_paid_from_the_budget_only_when_it_happens() {
    let p = policy(RetryPolicy::builder().max_attempts(3));
    let budget = RetryBudget::builder()
        .max_tokens(10)
        .retry_cost(5)
        .timeout_cost(10)
        .build()
        .unwrap();
    let now = Instant::now();
    let mut e = Engine::started(&p, || now);
    e.begin_attempt();
    assert!(matches!(
        e.after_failure_within(false, None, now, None, Some(&budget)),
        Decision::Stop(_)
    ));
    assert_eq!(budget.available(), 10, "no retry, no withdrawal");
    assert_eq!(
        e.after_failure_within(true, None, now, None, Some(&budget)),
        Decision::Retry(100 * MS)
    );
    assert_eq!(budget.available(), 5);
    e.begin_attempt();
    e.mark_timed_out();
    assert_eq!(
        e.after_failure_within(true, None, now, None, Some(&budget)),
        Decision::Stop(GiveUpReason::BudgetExhausted)
    );
    assert_eq!(budget.available(), 5, "a refusal takes nothing");
}

#[tokio::test(start_paused = true)]
async fn the_ratio_budget_earns_from_every_call_and_keeps_a_retried_successs_cost() {
    let p = policy(RetryPolicy::builder().max_attempts(3));
    let budget = RetryBudget::ratio(0.5).build().unwrap();
    let now = Instant::now();
    // Four calls whose attempts all fail: each earns half a retry with its first failure,
    // so every second one can retry once.
    let mut retried = Vec::new();
    for _ in 0..4 {
        let mut e = Engine::started(&p, || now);
        e.begin_attempt();
        // What `decide` does when an attempt ends, before the engine's rules.
        crate::engine::steps::first_attempt_ended(&e, Some(&budget), 0);
        let first = e.after_failure_within(true, None, now, None, Some(&budget));
        retried.push(matches!(first, Decision::Retry(_)));
        if retried[retried.len() - 1] {
            e.begin_attempt();
            crate::engine::steps::first_attempt_ended(&e, Some(&budget), 0);
            assert_eq!(
                e.after_failure_within(true, None, now, None, Some(&budget)),
                Decision::Stop(GiveUpReason::BudgetExhausted),
                "a second attempt earns nothing"
            );
        }
    }
    assert_eq!(retried, [false, true, false, true]);
    // A call that succeeds after its retry keeps it paid for (the bucket would refund it).
    budget.deposit();
    let mut e = Engine::started(&p, || now);
    e.begin_attempt();
    crate::engine::steps::first_attempt_ended(&e, Some(&budget), 0);
    assert!(matches!(
        e.after_failure_within(true, None, now, None, Some(&budget)),
        Decision::Retry(_)
    ));
    e.begin_attempt();
    e.succeeded(&budget);
    assert_eq!(budget.available(), 0);
}

#[test]
fn begin_starts_the_clock_clips_the_timeout_and_refuses_a_spent_deadline() {
    let p = policy(
        RetryPolicy::builder()
            .max_elapsed(300 * MS)
            .timeout(200 * MS),
    );
    let t0 = Instant::now();
    let mut e = Engine::new(&p);
    assert_eq!(e.deadline(), None, "no clock before the first attempt");
    assert_eq!(e.begin(true, || t0, None), Start::Run(Some(200 * MS)));
    assert_eq!(e.deadline(), Some(t0 + 300 * MS));
    e.mark_timed_out();
    assert!(e.timed_out());
    assert_eq!(
        e.begin(true, || t0 + 250 * MS, None),
        Start::Run(Some(50 * MS))
    );
    assert!(!e.timed_out(), "the flags are the last attempt's");
    assert_eq!(
        e.begin(true, || t0 + 100 * MS, Some(t0 + 100 * MS)),
        Start::NotMade,
        "an inherited deadline already reached"
    );
    assert!(e.not_made());
    assert_eq!(e.attempt(), 3);
    assert_eq!(
        e.begin(false, || unreachable!("untimed: no clock"), None),
        Start::Run(None),
        "an untimed attempt always runs"
    );
    assert!(!e.not_made());
}

#[test]
fn would_run_agrees_with_begin() {
    let p = policy(
        RetryPolicy::builder()
            .max_elapsed(300 * MS)
            .timeout(200 * MS),
    );
    let t0 = Instant::now();
    let mut e = Engine::new(&p);
    assert!(
        e.would_run(true, || t0, None),
        "the first attempt starts the clock"
    );
    assert!(
        !e.would_run(true, || t0, Some(t0)),
        "an inherited deadline already reached"
    );
    assert!(
        e.would_run(false, || unreachable!(), Some(t0)),
        "untimed: always made"
    );
    assert_eq!(e.begin(true, || t0, None), Start::Run(Some(200 * MS)));
    for (at, made) in [(299, true), (300, false), (301, false)] {
        let now = t0 + at * MS;
        assert_eq!(e.would_run(true, || now, None), made, "at {at} ms");
        let mut copy = Engine::new(&p);
        copy.start_or(|| t0);
        assert_eq!(
            copy.begin(true, || now, None) != Start::NotMade,
            made,
            "at {at} ms"
        );
    }
    let untimed = policy(RetryPolicy::builder().timeout(200 * MS));
    let e = Engine::new(&untimed);
    assert!(e.would_run(true, || unreachable!("no deadline: no clock"), None));
}

#[test]
fn without_max_elapsed_begin_reads_no_clock() {
    let p = policy(RetryPolicy::builder().timeout(200 * MS));
    let mut e = Engine::new(&p);
    assert_eq!(
        e.begin(true, || unreachable!(), None),
        Start::Run(Some(200 * MS))
    );
    assert_eq!(e.begin(false, || unreachable!(), None), Start::Run(None));
}

#[test]
fn a_rejected_first_attempt_starts_the_clock_under_max_elapsed() {
    let t0 = Instant::now();
    let p = policy(RetryPolicy::builder().max_elapsed(300 * MS));
    let e = Engine::new(&p);
    e.rejected(|| t0);
    assert_eq!(e.deadline(), Some(t0 + 300 * MS));
    e.rejected(|| unreachable!("started already"));
    let untimed = policy(RetryPolicy::builder());
    Engine::new(&untimed).rejected(|| unreachable!("no max_elapsed: no clock"));
}

#[test]
fn one_layer_defers_only_with_attempts_left_and_an_outer_retrier() {
    let p = policy(RetryPolicy::builder().max_attempts(2).one_layer(true));
    let mut e = Engine::new(&p);
    e.begin_attempt();
    assert!(e.defers_to_outer(true));
    assert!(!e.defers_to_outer(false));
    e.begin_attempt();
    assert!(
        !e.defers_to_outer(true),
        "no attempts left: exhausted, not deferred"
    );
    let plain = policy(RetryPolicy::builder().max_attempts(2));
    let mut e = Engine::new(&plain);
    e.begin_attempt();
    assert!(!e.defers_to_outer(true), "only when the policy opts in");
}

#[test]
fn the_key_is_drawn_once() {
    let p = policy(RetryPolicy::builder());
    let e = Engine::started(&p, Instant::now);
    let k = e.idempotency_key();
    assert_eq!(e.idempotency_key(), k);
    assert_ne!(Engine::started(&p, Instant::now).idempotency_key(), k);
}
