//! The `serde` feature: policies, breakers and budgets read from TOML and JSON equal the ones the
//! builders make, and every bad setting is refused with a message that names its key.
#![cfg(feature = "serde")]

use std::time::Duration;

use retry_runtime::{Backoff, CircuitBreaker, Jitter, RetryBudget, RetryPolicy};
use serde::Deserialize;

const MS: Duration = Duration::from_millis(1);
const SECS: Duration = Duration::from_secs(1);

/// The error `toml` gives for a policy, as text.
fn policy_err(toml: &str) -> String {
    toml::from_str::<RetryPolicy>(toml).unwrap_err().to_string()
}

fn breaker_err(toml: &str) -> String {
    toml::from_str::<CircuitBreaker>(toml)
        .unwrap_err()
        .to_string()
}

fn budget_err(toml: &str) -> String {
    toml::from_str::<RetryBudget>(toml).unwrap_err().to_string()
}

/// Asserts that `err` names the key `field` (in backquotes, as the builders' messages do).
#[track_caller]
fn assert_names(err: &str, field: &str) {
    assert!(
        err.contains(&format!("`{field}`")),
        "no `{field}` in:\n{err}"
    );
}

#[test]
fn a_full_toml_policy_equals_the_builders() {
    let policy: RetryPolicy = toml::from_str(
        r#"
        max_attempts = 5
        delay = "250ms"
        backoff = "exponential"
        multiplier = 1.5
        max_delay = "1m 30s"
        jitter = "decorrelated"
        timeout = "2s"
        max_elapsed = "5m"
        "#,
    )
    .unwrap();
    let built = RetryPolicy::builder()
        .max_attempts(5)
        .delay(250 * MS)
        .backoff(Backoff::Exponential)
        .multiplier(1.5)
        .max_delay(90 * SECS)
        .jitter(Jitter::Decorrelated)
        .timeout(2 * SECS)
        .max_elapsed(300 * SECS)
        .build()
        .unwrap();
    assert_eq!(policy, built);
}

#[test]
fn a_full_json_policy_equals_the_builders() {
    let policy: RetryPolicy = serde_json::from_str(
        r#"{
            "max_attempts": 4,
            "delay": "100ms",
            "backoff": "linear",
            "max_delay": "1s",
            "jitter": 0.25,
            "timeout": "500ms",
            "max_elapsed": "10s"
        }"#,
    )
    .unwrap();
    let built = RetryPolicy::builder()
        .max_attempts(4)
        .delay(100 * MS)
        .backoff(Backoff::Linear)
        .max_delay(SECS)
        .jitter(Jitter::Proportional(0.25))
        .timeout(500 * MS)
        .max_elapsed(10 * SECS)
        .build()
        .unwrap();
    assert_eq!(policy, built);
}

#[test]
fn an_integer_multiplier_and_a_factor_as_text_are_read() {
    let policy: RetryPolicy = toml::from_str("multiplier = 3\njitter = \"0.5\"").unwrap();
    let built = RetryPolicy::builder()
        .multiplier(3.0)
        .jitter(Jitter::Proportional(0.5))
        .build()
        .unwrap();
    assert_eq!(policy, built);
}

#[test]
fn empty_tables_give_the_defaults() {
    assert_eq!(
        toml::from_str::<RetryPolicy>("").unwrap(),
        RetryPolicy::default()
    );
    assert_eq!(
        serde_json::from_str::<RetryPolicy>("{}").unwrap(),
        RetryPolicy::default()
    );
    // Neither type compares, so compare what they show.
    assert_eq!(
        format!("{:?}", toml::from_str::<CircuitBreaker>("").unwrap()),
        format!("{:?}", CircuitBreaker::builder().build().unwrap())
    );
    assert_eq!(
        format!("{:?}", toml::from_str::<RetryBudget>("").unwrap()),
        format!("{:?}", RetryBudget::builder().build().unwrap())
    );
}

/// The example the README quotes: one file configures the retries, the breaker and the budget of
/// a client.
#[derive(Debug, Deserialize)]
struct Resilience {
    retry: RetryPolicy,
    breaker: CircuitBreaker,
    budget: RetryBudget,
}

const RESILIENCE_TOML: &str = r#"
# How each call to the payments API is retried.
[retry]
max_attempts = 4          # the first attempt included
delay = "200ms"           # before the first retry; doubles each time
max_delay = "2s"          # ceiling of one delay
jitter = "full"           # sleep a random time up to the delay
timeout = "1s"            # per attempt
max_elapsed = "10s"       # for the whole call, sleeps included

# Stop calling while half of the last 20 calls failed.
[breaker]
failure_rate = 0.5
sliding_window = 20
minimum_calls = 10
reset_timeout = "30s"     # then let probes through
half_open_probes = 2

# Shared by every call: retries stop when the bucket runs dry.
[budget]
max_tokens = 500
retry_cost = 5
timeout_cost = 10
success_deposit = 1
"#;

#[test]
fn the_readme_sections_load_into_one_struct() {
    let config: Resilience = toml::from_str(RESILIENCE_TOML).unwrap();
    let retry = RetryPolicy::builder()
        .max_attempts(4)
        .delay(200 * MS)
        .max_delay(2 * SECS)
        .jitter(Jitter::Full)
        .timeout(SECS)
        .max_elapsed(10 * SECS)
        .build()
        .unwrap();
    assert_eq!(config.retry, retry);
    let breaker = CircuitBreaker::builder()
        .failure_rate(0.5)
        .sliding_window(20)
        .minimum_calls(10)
        .reset_timeout(30 * SECS)
        .half_open_probes(2)
        .build()
        .unwrap();
    assert_eq!(format!("{:?}", config.breaker), format!("{breaker:?}"));
    let budget = RetryBudget::builder()
        .max_tokens(500)
        .retry_cost(5)
        .timeout_cost(10)
        .success_deposit(1)
        .build()
        .unwrap();
    assert_eq!(format!("{:?}", config.budget), format!("{budget:?}"));
    assert!(config.budget.try_withdraw(true));
    assert_eq!(config.budget.available(), 490);
}

#[tokio::test(start_paused = true)]
async fn a_loaded_policy_retries() {
    let config: Resilience = toml::from_str(RESILIENCE_TOML).unwrap();
    let mut calls = 0;
    let value = config
        .retry
        .retry(|| {
            calls += 1;
            let n = calls;
            async move {
                if n < 3 {
                    Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
                } else {
                    Ok(n)
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, 3);
}

#[test]
fn a_section_error_points_into_the_file() {
    let err = toml::from_str::<Resilience>(&RESILIENCE_TOML.replace("\"200ms\"", "\"200 mss\""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 5"), "{err}");
    assert_names(&err, "delay");
}

// One test per bad setting; each message names the key.

#[test]
fn negative_max_attempts() {
    let err = policy_err("max_attempts = -1");
    assert_names(&err, "max_attempts");
    assert!(err.contains("must be a whole number ≥ 0, got -1"), "{err}");
    let err = serde_json::from_str::<RetryPolicy>(r#"{"max_attempts": -1}"#)
        .unwrap_err()
        .to_string();
    assert_names(&err, "max_attempts");
}

#[test]
fn zero_max_attempts() {
    let err = policy_err("max_attempts = 0");
    assert_names(&err, "max_attempts");
    assert!(err.contains("must be at least 1"), "{err}");
}

#[test]
fn zero_duration() {
    for field in ["delay", "max_delay", "timeout", "max_elapsed"] {
        for zero in ["0s", "0ms", "0"] {
            let err = policy_err(&format!("{field} = \"{zero}\""));
            assert!(
                err.contains(&format!("invalid `{field}`: must be longer than zero")),
                "{err}"
            );
        }
    }
}

#[test]
fn wrong_duration_unit() {
    let err = policy_err(r#"delay = "200 mss""#);
    assert!(
        err.contains(r#"invalid duration "200 mss" for `delay`: unknown time unit "mss""#),
        "{err}"
    );
    assert!(err.contains(r#"write it like "250ms""#), "{err}");
    let err = policy_err(r#"timeout = "2 parsecs""#);
    assert_names(&err, "timeout");
    let err = policy_err(r#"max_delay = "fast""#);
    assert_names(&err, "max_delay");
}

#[test]
fn a_number_where_a_duration_is_expected() {
    let err = policy_err("delay = 200");
    assert!(
        err.contains(r#"invalid `delay`: a duration needs a unit, as a string: write "200ms" or "200s", not 200"#),
        "{err}"
    );
    let err = breaker_err("reset_timeout = 30.5");
    assert_names(&err, "reset_timeout");
    let err = serde_json::from_str::<RetryPolicy>(r#"{"timeout": 5}"#)
        .unwrap_err()
        .to_string();
    assert_names(&err, "timeout");
}

#[test]
fn an_unknown_key() {
    let err = policy_err("max_atempts = 3");
    assert!(err.contains("unknown field `max_atempts`"), "{err}");
    assert!(
        err.contains("`max_attempts`"),
        "the valid keys are listed: {err}"
    );
    let err = breaker_err("failure_treshold = 3");
    assert!(err.contains("unknown field `failure_treshold`"), "{err}");
    let err = budget_err("tokens = 3");
    assert!(err.contains("unknown field `tokens`"), "{err}");
}

#[test]
fn multiplier_below_one() {
    let err = policy_err("multiplier = 0.5");
    assert!(
        err.contains("invalid `multiplier`: must be a finite number ≥ 1, got 0.5"),
        "{err}"
    );
}

#[test]
fn multiplier_with_fixed_backoff() {
    let err = policy_err("backoff = \"fixed\"\nmultiplier = 2");
    assert_names(&err, "multiplier");
    assert!(err.contains("only applies to exponential backoff"), "{err}");
}

#[test]
fn delay_above_max_delay() {
    let err = policy_err("delay = \"3s\"\nmax_delay = \"2s\"");
    assert_names(&err, "delay");
    assert!(
        err.contains("must not exceed `max_delay`: 3s > 2s"),
        "{err}"
    );
}

#[test]
fn jitter_factor_above_one() {
    for toml in ["jitter = 1.5", "jitter = \"1.5\""] {
        let err = policy_err(toml);
        assert!(
            err.contains("invalid `jitter`: a jitter factor must be in (0, 1], got 1.5"),
            "{err}"
        );
    }
}

#[test]
fn unknown_jitter() {
    let err = policy_err(r#"jitter = "fulll""#);
    assert!(err.contains("unknown jitter `fulll`"), "{err}");
    assert!(
        err.contains(r#""none", "full", "equal", "decorrelated""#),
        "{err}"
    );
}

#[test]
fn unknown_backoff() {
    let err = policy_err(r#"backoff = "quadratic""#);
    assert!(err.contains("unknown backoff `quadratic`"), "{err}");
}

#[test]
fn breaker_zero_failure_rate() {
    let err = breaker_err("failure_rate = 0");
    assert!(
        err.contains("invalid `failure_rate`: must be a share of failures in (0, 1]"),
        "{err}"
    );
}

#[test]
fn breaker_failure_rate_with_failure_threshold() {
    let err = breaker_err("failure_threshold = 5\nfailure_rate = 0.5");
    assert!(
        err.contains("invalid `failure_rate`: cannot be combined with `failure_threshold`"),
        "{err}"
    );
}

#[test]
fn breaker_sliding_window_without_failure_rate() {
    let err = breaker_err("sliding_window = 20");
    assert!(
        err.contains("invalid `sliding_window`: only applies with `failure_rate`"),
        "{err}"
    );
}

#[test]
fn breaker_zero_reset_timeout() {
    let err = breaker_err(r#"reset_timeout = "0s""#);
    assert!(
        err.contains("invalid `reset_timeout`: must be at least 1"),
        "{err}"
    );
}

#[test]
fn budget_zero_retry_cost() {
    let err = budget_err("retry_cost = 0");
    assert!(
        err.contains("invalid `retry_cost`: must be at least 1"),
        "{err}"
    );
}

#[test]
fn a_count_too_large_for_u32() {
    let err = budget_err("max_tokens = 5000000000");
    assert!(
        err.contains("invalid `max_tokens`: must be at most 4294967295, got 5000000000"),
        "{err}"
    );
}

#[test]
fn durations_near_the_limit_do_not_panic() {
    let policy: RetryPolicy = toml::from_str(
        "delay = \"584 years\"\ntimeout = \"584 years\"\nmax_elapsed = \"584years\"",
    )
    .unwrap();
    assert_eq!(policy.max_delay(), policy.delay());
    assert_eq!(policy.delays().count(), 2);
    let err = policy_err(r#"max_delay = "99999999999999999 years""#);
    assert!(err.contains("invalid duration"), "{err}");
    assert_names(&err, "max_delay");
}

/// The config file the guide's configuration chapter shows loads, and means the same as the one
/// above.
#[test]
fn the_guides_config_example_loads() {
    let chapter = include_str!("../../docs/guide/configuration.md");
    let section = &chapter[chapter.find("## The file").expect("a section on the file")..];
    let start = section.find("```toml\n").expect("a TOML example") + "```toml\n".len();
    let example = &section[start..start + section[start..].find("```").expect("closed")];
    let from_guide: Resilience = toml::from_str(example).unwrap();
    let from_test: Resilience = toml::from_str(RESILIENCE_TOML).unwrap();
    assert_eq!(from_guide.retry, from_test.retry);
    assert_eq!(
        format!("{:?}", from_guide.breaker),
        format!("{:?}", from_test.breaker)
    );
    assert_eq!(
        format!("{:?}", from_guide.budget),
        format!("{:?}", from_test.budget)
    );
}

#[test]
fn a_count_too_large_for_any_integer_is_out_of_range() {
    for err in [
        policy_err("max_attempts = 18446744073709551616"),
        serde_json::from_str::<RetryPolicy>(r#"{"max_attempts": 18446744073709551616}"#)
            .unwrap_err()
            .to_string(),
        policy_err("max_attempts = 1e30"),
    ] {
        assert_names(&err, "max_attempts");
        assert!(err.contains("must be at most 67108863"), "{err}");
        assert!(!err.contains("whole number"), "{err}");
    }
    let err = policy_err("max_attempts = 2.5");
    assert!(err.contains("must be a whole number, got 2.5"), "{err}");
}

#[test]
fn a_max_delay_below_the_default_delay_blames_max_delay() {
    let err = policy_err(r#"max_delay = "50ms""#);
    assert!(
        err.contains("invalid `max_delay`: must be at least `delay`, whose default is 100ms"),
        "{err}"
    );
    assert!(err.contains("50ms"), "{err}");
    assert!(!err.contains("invalid `delay`"), "{err}");
    // A `delay` that was set is still the one at fault.
    let err = policy_err("delay = \"3s\"\nmax_delay = \"2s\"");
    assert!(err.contains("invalid `delay`"), "{err}");
}

#[test]
fn a_likely_mistyped_duration_is_refused() {
    let err = policy_err(r#"delay = "1M""#);
    assert_names(&err, "delay");
    assert!(err.contains(r#""M" means months"#), "{err}");
    assert!(err.contains(r#""1m""#) && err.contains(r#""30d""#), "{err}");
    for text in ["1m1m", "1m 30s 10s", "1min 1m", "2 seconds 3s"] {
        let err = policy_err(&format!("max_delay = \"{text}\""));
        assert_names(&err, "max_delay");
        assert!(err.contains("more than once"), "{text}: {err}");
    }
    // What a person means is still read.
    let p: RetryPolicy = toml::from_str("delay = \"1m 30s\"\nmax_delay = \"2 months\"").unwrap();
    assert_eq!(p.delay(), 90 * SECS);
    assert!(p.max_delay() > 59 * 24 * 3600 * SECS);
}

#[test]
fn log_error_is_read_from_config() {
    let p: RetryPolicy = toml::from_str(r#"log_error = "none""#).unwrap();
    assert_eq!(p.log_error(), retry_runtime::LogError::None);
    let err = policy_err(r#"log_error = "full""#);
    assert!(err.contains("unknown log_error `full`"), "{err}");
}
