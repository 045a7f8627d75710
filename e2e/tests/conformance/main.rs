//! The conformance suite (issue 13): one table of scripted scenarios ([`table`]), each run
//! through every driver ([`drivers::ALL`]: the attribute with `policy = …` (through the closure
//! driver, and through the generated loop), the closure API, with `--features tower` the tower
//! layer, and with `--features reqwest-middleware` the reqwest middleware)
//! under tokio's paused clock, asserting that each driver shows what the engine's rules say
//! (the row's expected value, written from the README and the runtime's rustdoc) and that the
//! drivers agree with each other: the result, the attempts the body ran (start time,
//! `context().attempt()`, one idempotency key per call), the `on_retry` calls, the `tracing`
//! events, the breaker and budget afterwards, when the call ended, and with
//! `--features metrics` the metrics.
//!
//! A row fails with one line per field that differs, naming every driver's value and the
//! expected one. A driver that lacks a setting a row needs may skip that row
//! ([`drivers::Driver::unsupported`]), and the report says so: the generated loop skips the
//! hedging rows (its attempts cannot overlap). The harness owns the guards and the probe behind
//! `Arc`s, so that a driver needing `'static` guards and hooks (the middleware) clones them.
//!
//! Where the drivers once disagreed, the engine's rule now decides for both, and the rows say
//! so: the deadline is checked before the breaker (`deadline_spent_with_*_breaker`), and an
//! error that says it timed out costs `timeout_cost` and counts as a breaker failure
//! (`error_saying_timeout_*`, with the closure API told `.timeout_if(is_timeout)`).
//!
//! A binary of its own: it installs the global `tracing` subscriber that records events.

mod drivers;
mod expect;
mod harness;
mod model;
mod table;

use std::fmt::Write as _;

use crate::expect::Scenario;
use crate::model::fields;

/// Runs `scenario` through every driver and fails with every disagreement.
async fn check(scenario: Scenario) {
    let expected = scenario.observed(cfg!(feature = "metrics"));
    let mut runs = vec![];
    let mut skipped = vec![];
    for driver in drivers::ALL {
        match driver.unsupported(&scenario) {
            Some(why) => skipped.push(format!("\n  {}: skipped ({why})", driver.name())),
            None => runs.push((driver.name(), harness::run(&scenario, *driver).await)),
        }
    }
    assert!(!runs.is_empty(), "no driver ran `{}`", scenario.name);
    let want = fields(&expected);
    let got: Vec<_> = runs.iter().map(|(name, o)| (*name, fields(o))).collect();
    let mut report = vec![];
    for (i, (field, expected)) in want.iter().enumerate() {
        let values: Vec<_> = got.iter().map(|(name, f)| (*name, &f[i].1)).collect();
        if values.iter().any(|(_, v)| *v != expected) {
            let mut line = format!("  {field}:");
            for (name, v) in values {
                let _ = write!(line, "\n    {name:<9} = {v}");
            }
            let _ = write!(line, "\n    expected  = {expected}");
            report.push(line);
        }
    }
    assert!(
        report.is_empty(),
        "scenario `{}`: the drivers disagree with the engine's rules or with each other\n{}{}",
        scenario.name,
        report.join("\n"),
        skipped.concat(),
    );
}

/// One `#[tokio::test(start_paused = true)]` per row of the table.
macro_rules! rows {
    ($($row:ident),* $(,)?) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $row() {
                check(table::$row()).await;
            }
        )*

        /// Every row of the table, for a count.
        const ROWS: &[&str] = &[$(stringify!($row)),*];
    };
}

rows! {
    success_first_try,
    success_after_retries,
    exhausted,
    single_attempt_policy,
    non_retryable_first,
    non_retryable_after_a_retry,
    unknown_outcome_not_repeated,
    unknown_outcome_repeated_when_idempotent,
    timeout_then_success,
    timeout_exhausted,
    slow_attempt_within_timeout,
    attempt_ending_at_its_timeout,
    slow_attempt_cut,
    hint_below_delay,
    hint_above_delay,
    hint_beyond_max_delay,
    hint_beyond_max_elapsed,
    max_elapsed_reached,
    max_elapsed_clips_timeout,
    deadline_spent_on_entry,
    deadline_spent_on_entry_without_timeout,
    inherited_deadline_bounds_sleeps,
    inherited_deadline_clips_timeout,
    one_layer_defers_to_an_outer_call_with_attempts_left,
    one_layer_retries_on_the_outer_calls_last_attempt,
    without_one_layer_a_nested_call_retries,
    one_layer_non_retryable_is_not_a_deferral,
    breaker_open_rejects,
    breaker_opens_mid_call_refunds_the_retry,
    half_open_probe_success,
    half_open_probe_failure,
    half_open_two_probes_one_call,
    expired_breaker_admits_a_probe,
    timeouts_open_the_breaker,
    non_retryable_error_is_a_breaker_success,
    budget_exhausted_mid_call,
    budget_refuses_the_first_retry,
    long_polling_waits_a_refused_retrys_backoff,
    long_polling_no_wait_when_not_refused_by_the_budget,
    budget_refund_on_retried_success,
    budget_deposit_on_first_try,
    budget_timeout_cost_refunded,
    error_saying_timeout_costs_timeout_cost,
    error_saying_timeout_opens_the_breaker,
    cancelled_during_an_attempt_holds_the_probe,
    cancelled_during_a_sleep_keeps_the_payment,
    cancelled_before_the_timeout,
    deadline_spent_with_open_breaker,
    deadline_spent_with_expired_breaker,
    deadline_spent_with_half_open_breaker,
    ok_retried_then_success,
    ok_retried_until_exhausted,
    ok_retried_with_budget_refund,
    hedge_slow_attempt,
    hedge_not_needed,
    hedge_paid_by_the_budget,
    throttle_sheds_the_first_attempt,
    throttle_sheds_a_retry,
    throttle_hears_an_accepted_attempt,
    bulkhead_full_turns_the_call_away,
    bulkhead_waits_for_a_slot,
    bulkhead_wait_runs_out,
    hedge_copies_cut_by_their_timeouts,
    hedge_shed_by_the_throttle,
    hedged_retry_rejected_by_the_breaker,
    hedged_retry_shed_by_the_throttle,
    one_layer_hedged_call_makes_one_attempt,
    throttling_retry_has_its_own_delay_and_cost,
    throttling_without_its_settings_is_a_retry_like_any,
    delay_for_replaces_the_schedule,
    delay_for_within_max_delay_and_above_the_hint,
}

/// The rows injecting faults (feature `testing`: run in CI's `--all-features` pass, or with
/// `--features testing`).
#[cfg(feature = "testing")]
mod injection {
    use super::{check, table};

    rows! {
        injected_error_then_success,
        injected_errors_until_exhausted,
        injected_latency_cut_by_the_timeout,
        injected_latency_past_the_timeout,
        injected_error_in_a_hedged_call,
        injected_error_in_a_hedge,
    }

    #[test]
    fn the_injection_rows_are_not_in_the_main_table() {
        assert!(ROWS.iter().all(|r| !super::ROWS.contains(r)));
    }
}

#[test]
fn the_table_has_every_row_once() {
    let mut names = ROWS.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ROWS.len());
    assert!(ROWS.len() >= 25);
}
