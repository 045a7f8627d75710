//! Breakers and budgets from config files at the extremes: a years-long `reset_timeout`, `u32::MAX`
//! counts, a failure rate that floats get wrong, and a budget that could never pay for a retry.
#![cfg(feature = "serde")]

use std::time::Duration;

use retry_runtime::{BreakerState, CircuitBreaker, RetryBudget};

fn open(breaker: &CircuitBreaker, failures: u32) {
    for _ in 0..failures {
        let p = breaker.try_acquire().unwrap();
        breaker.record(p, false);
    }
}

#[tokio::test(start_paused = true)]
async fn a_reset_timeout_of_300000000000_years_keeps_the_breaker_open() {
    let breaker: CircuitBreaker = toml::from_str(
        r#"
        failure_threshold = 1
        reset_timeout = "300000000000y"
        "#,
    )
    .unwrap();
    open(&breaker, 1); // panicked here: Instant + Duration overflowed
    tokio::time::advance(Duration::from_secs(100 * 365 * 24 * 3600)).await;
    assert_eq!(breaker.state(), BreakerState::Open);
    assert!(breaker.try_acquire().is_err());
}

#[tokio::test(start_paused = true)]
async fn u32_max_counts_load_and_work() {
    let breaker: CircuitBreaker = toml::from_str(
        r"
        failure_threshold = 4294967295
        half_open_probes = 4294967295
        ",
    )
    .unwrap();
    open(&breaker, 100);
    assert_eq!(breaker.state(), BreakerState::Closed);
    let budget: RetryBudget = toml::from_str(
        r"
        max_tokens = 4294967295
        retry_cost = 4294967295
        timeout_cost = 4294967295
        success_deposit = 4294967295
        ",
    )
    .unwrap();
    assert!(budget.try_withdraw(false));
    budget.deposit();
    assert_eq!(budget.available(), u32::MAX);
}

#[tokio::test(start_paused = true)]
async fn a_failure_rate_of_055_trips_at_55_of_100() {
    let breaker: CircuitBreaker = toml::from_str(
        r"
        failure_rate = 0.55
        sliding_window = 100
        ",
    )
    .unwrap();
    for i in 0..100 {
        let p = breaker.try_acquire().unwrap();
        breaker.record(p, i >= 55);
    }
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[test]
fn a_rate_too_small_to_count_names_failure_rate() {
    let err = toml::from_str::<CircuitBreaker>("failure_rate = 1e-9")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`failure_rate`"), "{err}");
}

#[test]
fn a_budget_that_could_never_pay_names_the_field() {
    for (toml, field) in [
        ("max_tokens = 4", "max_tokens"),
        ("max_tokens = 10\nretry_cost = 11", "retry_cost"),
        ("max_tokens = 10\ntimeout_cost = 11", "timeout_cost"),
        ("retry_cost = 501", "retry_cost"),
    ] {
        let err = toml::from_str::<RetryBudget>(toml).unwrap_err().to_string();
        assert!(err.contains(&format!("`{field}`")), "{toml}: {err}");
        assert!(err.contains("could never pay for a retry"), "{toml}: {err}");
    }
}
