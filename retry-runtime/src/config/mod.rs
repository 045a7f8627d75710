//! Policies, circuit breakers and retry budgets from config files (feature `serde`).
//!
//! [`RetryPolicy`], [`CircuitBreaker`] and [`RetryBudget`] implement `Deserialize`: a table whose
//! keys are the builder's method names, every key optional (a missing one keeps the builder's
//! default), checked by the builder's own `build()`, so a file is held to exactly the rules and
//! error messages of code. Durations are strings with a unit, read by
//! [`parse_duration`](crate::parse_duration) as the attribute reads them: `"250ms"`, `"2s"`,
//! `"1m 30s"` (a capital `M` and a repeated unit are refused as likely typos). A `null` (JSON,
//! YAML) counts as a missing key. Any format works: TOML, YAML, JSON.
//!
//! ```
//! use serde::Deserialize;
//! use std::time::Duration;
//! use reattempt::{CircuitBreaker, Jitter, RetryBudget, RetryPolicy};
//!
//! #[derive(Deserialize)]
//! struct Resilience {
//!     retry: RetryPolicy,
//!     breaker: CircuitBreaker,
//!     budget: RetryBudget,
//! }
//!
//! let config: Resilience = toml::from_str(r#"
//!     [retry]
//!     max_attempts = 4
//!     delay = "200ms"
//!     max_delay = "2s"
//!     jitter = "equal"
//!     timeout = "1s"
//!
//!     [breaker]
//!     failure_threshold = 5
//!     reset_timeout = "30s"
//!
//!     [budget]
//!     max_tokens = 100
//! "#)?;
//! assert_eq!(config.retry.max_attempts(), 4);
//! assert_eq!(config.retry.jitter(), Jitter::Equal);
//! assert_eq!(config.retry.timeout(), Some(Duration::from_secs(1)));
//! assert_eq!(config.budget.available(), 100);
//!
//! // The builder's rules and messages, plus the place in the file.
//! let err = toml::from_str::<RetryPolicy>(r#"multiplier = 0.5"#).unwrap_err();
//! assert!(err.to_string().contains("invalid `multiplier`: must be a finite number ≥ 1, got 0.5"));
//! # Ok::<(), toml::de::Error>(())
//! ```

// The rooms: this module maps a table onto its builder; `table` reads the raw tables (their keys
// and the table shape); `setting` reads one key's value, naming the key in every error.
mod setting;
mod table;

#[cfg(feature = "tonic")]
pub(crate) mod grpc;

use serde::Deserialize;
use serde::de::{self, Deserializer};

use retry_rules::PolicySettings;

use crate::ConfigError;
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::schedule::policy::{RetryPolicy, RetryPolicyBuilder};
use crate::schedule::preset::Preset;

use table::{RawBreaker, RawBudget, RawPolicy, table};

/// Read from a table of the builder's settings, checked by
/// [`RetryPolicyBuilder::build`](crate::RetryPolicyBuilder::build).
///
/// Keys: `preset` (a [`Preset`]'s name, `"aws-2026"`: the table starts from it, and its other keys
/// change it), `max_attempts`, `delay`, `throttling_delay`, `backoff` (`"fixed"`, `"linear"`,
/// `"exponential"`),
/// `multiplier`, `max_delay`, `jitter` (`"none"`, `"full"`, `"equal"`, `"decorrelated"` or a
/// factor in (0, 1]), `timeout`, `max_elapsed`, `log_error` (`"none"`, `"type"`, `"debug"`: see
/// [`LogError`](crate::LogError)), `hedge_after` (`"50ms"` or `"p95"`: see
/// [`HedgeAfter`](crate::HedgeAfter)), `one_layer` (a bool), `idempotent` (a bool: see
/// [`RetryPolicyBuilder::idempotent`](crate::RetryPolicyBuilder::idempotent)), `hint_mode`
/// (`"floor"` or `"clamp 5s"`: see [`HintMode`](crate::HintMode)), `long_polling` (a bool: see
/// [`RetryPolicyBuilder::long_polling`](crate::RetryPolicyBuilder::long_polling)), `inject_faults` (a table: `rate`,
/// `latency`, `latency_rate`, `seed`; see `testing::FaultInjection`; read only with feature `testing`, refused
/// with a message saying so without it); durations are strings such as `"200ms"`.
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use std::time::Duration;
/// use reattempt::RetryPolicy;
///
/// let policy: RetryPolicy = toml::from_str(
///     r#"inject_faults = { rate = 0.1, latency = "50ms", seed = 7 }"#,
/// ).unwrap();
/// let faults = policy.fault_injection().unwrap();
/// assert_eq!((faults.rate(), faults.latency(), faults.seed()), (0.1, Some(Duration::from_millis(50)), 7));
/// let err = toml::from_str::<RetryPolicy>("inject_faults = { rate = 2 }").unwrap_err();
/// assert!(err.to_string().contains("invalid `rate`: must be a number in [0, 1]"), "{err}");
/// # }
/// ```
///
/// ```
/// use std::time::Duration;
/// use reattempt::{Backoff, Jitter, RetryPolicy};
///
/// let policy: RetryPolicy = serde_json::from_str(
///     r#"{ "max_attempts": 5, "delay": "50ms", "backoff": "linear", "jitter": 0.2 }"#,
/// )?;
/// let built = RetryPolicy::builder()
///     .max_attempts(5)
///     .delay(Duration::from_millis(50))
///     .backoff(Backoff::Linear)
///     .jitter(Jitter::Proportional(0.2))
///     .build()?;
/// assert_eq!(policy, built);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `log_error` and `hedge_after`, and their errors in a table:
///
/// ```
/// use std::time::Duration;
/// use reattempt::{HedgeAfter, LogError, RetryPolicy};
///
/// let policy: RetryPolicy = toml::from_str(r#"log_error = "debug""#)?;
/// assert_eq!(policy.log_error(), LogError::Debug);
/// let err = toml::from_str::<RetryPolicy>(r#"log_error = "display""#).unwrap_err();
/// assert!(err.to_string().contains(r#"unknown log_error `display`: expected "none", "type" or "debug""#));
///
/// let policy: RetryPolicy = toml::from_str(r#"hedge_after = "p95""#)?;
/// assert_eq!(policy.hedge_after(), Some(HedgeAfter::quantile(95.0)));
/// let policy: RetryPolicy = toml::from_str(r#"hedge_after = "50ms""#)?;
/// assert_eq!(policy.hedge_after(), Some(HedgeAfter::Fixed(Duration::from_millis(50))));
/// let err = toml::from_str::<RetryPolicy>(r#"hedge_after = "p100""#).unwrap_err();
/// assert!(err.to_string().contains("invalid `hedge_after`"), "{err}");
/// let err = toml::from_str::<RetryPolicy>("timeout = \"40ms\"\nhedge_after = \"50ms\"").unwrap_err();
/// assert!(err.to_string().contains("invalid `hedge_after`: must be shorter than `timeout`"), "{err}");
/// # Ok::<(), toml::de::Error>(())
/// ```
impl<'de> Deserialize<'de> for RetryPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: RawPolicy = table(deserializer)?;
        // A preset's settings, each changed by the table's own key.
        let base = raw
            .preset
            .map_or_else(PolicySettings::new, |p| p.policy().settings());
        let settings = PolicySettings {
            max_attempts: raw.max_attempts.or(base.max_attempts),
            delay: raw.delay.or(base.delay),
            throttling_delay: raw.throttling_delay.or(base.throttling_delay),
            backoff: raw.backoff.or(base.backoff),
            multiplier: raw.multiplier.or(base.multiplier),
            max_delay: raw.max_delay.or(base.max_delay),
            jitter: raw.jitter.or(base.jitter),
            timeout: raw.timeout.or(base.timeout),
            max_elapsed: raw.max_elapsed.or(base.max_elapsed),
            log_error: raw.log_error.or(base.log_error),
            hedge_after: raw.hedge_after.or(base.hedge_after),
            one_layer: raw.one_layer.or(base.one_layer),
            idempotent: raw.idempotent.or(base.idempotent),
            hint_mode: raw.hint_mode.or(base.hint_mode),
            long_polling: raw.long_polling.or(base.long_polling),
        };
        let builder = RetryPolicyBuilder::from_settings(settings);
        #[cfg(feature = "testing")]
        let builder = match raw.inject_faults {
            Some(faults) => builder.inject_faults(faults.build().map_err(de::Error::custom)?),
            None => builder,
        };
        #[cfg(not(feature = "testing"))]
        let _ = raw.inject_faults;
        builder.build().map_err(de::Error::custom)
    }
}

/// Read from a table of the builder's settings, checked by
/// [`CircuitBreakerBuilder::build`](crate::CircuitBreakerBuilder::build).
///
/// Keys: `failure_threshold`, or `failure_rate` with `sliding_window` and `minimum_calls`;
/// `reset_timeout` (a duration string such as `"30s"`) and `half_open_probes`. The builder's
/// `name` is not read (it is a `&'static str`): a breaker from config carries the default name.
///
/// ```
/// use reattempt::{BreakerState, CircuitBreaker};
///
/// let breaker: CircuitBreaker = toml::from_str(r#"
///     failure_rate = 0.5
///     sliding_window = 20
///     minimum_calls = 10
///     reset_timeout = "10s"
/// "#)?;
/// assert_eq!(breaker.state(), BreakerState::Closed);
/// # Ok::<(), toml::de::Error>(())
/// ```
impl<'de> Deserialize<'de> for CircuitBreaker {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: RawBreaker = table(deserializer)?;
        let mut b = CircuitBreaker::builder();
        if let Some(n) = raw.failure_threshold {
            b = b.failure_threshold(n);
        }
        if let Some(rate) = raw.failure_rate {
            b = b.failure_rate(rate);
        }
        if let Some(n) = raw.sliding_window {
            b = b.sliding_window(n);
        }
        if let Some(n) = raw.minimum_calls {
            b = b.minimum_calls(n);
        }
        if let Some(d) = raw.reset_timeout {
            b = b.reset_timeout(d);
        }
        if let Some(n) = raw.half_open_probes {
            b = b.half_open_probes(n);
        }
        b.build().map_err(de::Error::custom)
    }
}

/// Read from a table of the builder's settings, checked by
/// [`RetryBudgetBuilder::build`](crate::RetryBudgetBuilder::build).
///
/// Keys: `preset` (a [`Preset`]'s name: its budget, changed by the other keys), `max_tokens`,
/// `retry_cost`, `timeout_cost`, `throttling_cost`, `success_deposit`, `initial_tokens`; or,
/// for the ratio kind ([`RetryBudget::ratio`](crate::RetryBudget::ratio)), `ratio` with
/// `min_retries_per_second` and `ttl` (a duration string), which exclude the bucket's keys.
///
/// ```
/// use reattempt::RetryBudget;
///
/// let fleet: RetryBudget = toml::from_str("ratio = 0.2\nmin_retries_per_second = 0.1\nttl = \"10s\"")?;
/// assert!(fleet.is_ratio());
/// assert_eq!(fleet.available(), 1);
/// let cold: RetryBudget = toml::from_str("max_tokens = 25\ninitial_tokens = 5")?;
/// assert_eq!(cold.available(), 5);
/// let err = toml::from_str::<RetryBudget>("ratio = 0.2\nmax_tokens = 25").unwrap_err();
/// assert!(err.to_string().contains("invalid `max_tokens`: cannot be combined with `ratio`"), "{err}");
/// let err = toml::from_str::<RetryBudget>("ttl = \"10s\"").unwrap_err();
/// assert!(err.to_string().contains("invalid `ttl`: only applies with `ratio`"), "{err}");
/// # Ok::<(), toml::de::Error>(())
/// ```
///
/// ```
/// use reattempt::{ErrorClass, RetryBudget, RetryPolicy};
///
/// let budget: RetryBudget = toml::from_str(r#"preset = "aws-2026""#)?;
/// assert_eq!(budget.cost(ErrorClass::Throttling), 5);
/// let policy: RetryPolicy = toml::from_str("preset = \"aws-2026\"\nmax_attempts = 5")?;
/// assert_eq!((policy.max_attempts(), policy.delay()), (5, std::time::Duration::from_millis(50)));
/// let err = toml::from_str::<RetryPolicy>(r#"preset = "aws""#).unwrap_err();
/// assert!(err.to_string().contains("unknown preset `aws`"), "{err}");
/// # Ok::<(), toml::de::Error>(())
/// ```
///
/// ```
/// use reattempt::RetryBudget;
///
/// let budget: RetryBudget = toml::from_str("max_tokens = 10\nretry_cost = 5")?;
/// assert!(budget.try_withdraw(false));
/// assert!(budget.try_withdraw(false));
/// assert!(!budget.try_withdraw(false));
///
/// let err = toml::from_str::<RetryBudget>("retry_cost = 0").unwrap_err();
/// assert!(err.to_string().contains("invalid `retry_cost`: must be at least 1"));
///
/// let cold: RetryBudget = toml::from_str("preset = \"aws-2026\"\ninitial_tokens = 0")?;
/// assert_eq!(cold.available(), 0);
/// let err = toml::from_str::<RetryBudget>("max_tokens = 10\ninitial_tokens = 11").unwrap_err();
/// assert!(err.to_string().contains("invalid `initial_tokens`: must be at most `max_tokens`"), "{err}");
/// # Ok::<(), toml::de::Error>(())
/// ```
impl<'de> Deserialize<'de> for RetryBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: RawBudget = table(deserializer)?;
        if let Some(ratio) = raw.ratio {
            return ratio_budget(&raw, ratio).map_err(de::Error::custom);
        }
        for (field, set) in [
            (
                "min_retries_per_second",
                raw.min_retries_per_second.is_some(),
            ),
            ("ttl", raw.ttl.is_some()),
        ] {
            if set {
                return Err(de::Error::custom(ConfigError::Requires {
                    field,
                    other: "ratio",
                }));
            }
        }
        let mut b = raw.preset.map_or_else(RetryBudget::builder, Preset::budget);
        if let Some(n) = raw.max_tokens {
            b = b.max_tokens(n);
        }
        if let Some(n) = raw.retry_cost {
            b = b.retry_cost(n);
        }
        if let Some(n) = raw.timeout_cost {
            b = b.timeout_cost(n);
        }
        if let Some(n) = raw.throttling_cost {
            b = b.throttling_cost(n);
        }
        if let Some(n) = raw.success_deposit {
            b = b.success_deposit(n);
        }
        if let Some(n) = raw.initial_tokens {
            b = b.initial_tokens(n);
        }
        b.build().map_err(de::Error::custom)
    }
}

/// The ratio kind from a table with `ratio`: the bucket's keys are refused by name.
fn ratio_budget(raw: &RawBudget, ratio: f64) -> Result<RetryBudget, ConfigError> {
    for (field, set) in [
        ("preset", raw.preset.is_some()),
        ("max_tokens", raw.max_tokens.is_some()),
        ("retry_cost", raw.retry_cost.is_some()),
        ("timeout_cost", raw.timeout_cost.is_some()),
        ("throttling_cost", raw.throttling_cost.is_some()),
        ("success_deposit", raw.success_deposit.is_some()),
        ("initial_tokens", raw.initial_tokens.is_some()),
    ] {
        if set {
            return Err(ConfigError::Conflict {
                field,
                other: "ratio",
            });
        }
    }
    let mut b = RetryBudget::ratio(ratio);
    if let Some(floor) = raw.min_retries_per_second {
        b = b.min_retries_per_second(floor);
    }
    if let Some(ttl) = raw.ttl {
        b = b.ttl(ttl);
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use retry_rules::{HintMode, Jitter};

    fn policy(json: &str) -> Result<RetryPolicy, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    /// The 2026 AWS keys: `long_polling` and `hint_mode` on a policy (with the builder's check
    /// and a preset under them), `initial_tokens` on a budget.
    #[test]
    fn long_polling_hint_mode_and_initial_tokens_are_read_and_checked() {
        let p = policy(r#"{ "preset": "aws-2026", "long_polling": true }"#).unwrap();
        assert!(p.long_polling());
        assert_eq!(p.hint_mode(), HintMode::AWS_2026, "from the preset");
        let p = policy(r#"{ "preset": "aws-2026", "hint_mode": "floor" }"#).unwrap();
        assert_eq!(p.hint_mode(), HintMode::Floor, "the table's key wins");
        let p = policy(r#"{ "hint_mode": "clamp 2s" }"#).unwrap();
        assert_eq!(
            p.hint_mode(),
            HintMode::Clamp {
                above: Duration::from_secs(2)
            }
        );
        let e = policy(r#"{ "hint_mode": "cap" }"#).unwrap_err();
        assert!(e.contains("unknown hint_mode `cap`"), "{e}");
        let e = policy(r#"{ "max_attempts": 1, "long_polling": true }"#).unwrap_err();
        assert!(e.contains("invalid `long_polling`"), "{e}");
        let e = policy(r#"{ "long_polling": "yes" }"#).unwrap_err();
        assert!(e.contains("expected a boolean"), "{e}");
        let b: RetryBudget =
            serde_json::from_str(r#"{ "preset": "aws-2026", "initial_tokens": 20 }"#).unwrap();
        assert_eq!(b.available(), 20);
        let e = serde_json::from_str::<RetryBudget>(r#"{ "initial_tokens": 501 }"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid `initial_tokens`: must be at most `max_tokens`"),
            "{e}"
        );
        let e = serde_json::from_str::<RetryBudget>(r#"{ "initial_tokens": -1 }"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`initial_tokens`"), "{e}");
    }

    #[test]
    fn jitter_factors_as_text_or_number_meet_the_builders_rule() {
        assert_eq!(
            policy(r#"{"jitter": "0.5"}"#).unwrap().jitter(),
            Jitter::Proportional(0.5)
        );
        for json in [
            r#"{"jitter": "1.5"}"#,
            r#"{"jitter": 0}"#,
            r#"{"jitter": -1}"#,
        ] {
            let e = policy(json).unwrap_err();
            assert!(
                e.contains("invalid `jitter`: a jitter factor must be in (0, 1]"),
                "{e}"
            );
        }
        let e = policy(r#"{"jitter": true}"#).unwrap_err();
        assert!(e.contains("expected a jitter"), "{e}");
    }

    /// The ratio kind's keys: read, checked with errors naming the key, kept apart from the
    /// bucket's.
    #[test]
    fn a_ratio_budget_is_read_and_its_keys_are_checked() {
        let budget =
            |json: &str| serde_json::from_str::<RetryBudget>(json).map_err(|e| e.to_string());
        let b = budget(r#"{ "ratio": 0.5, "ttl": "2s" }"#).unwrap();
        assert!(b.is_ratio());
        assert_eq!(b.available(), 0, "no floor");
        for _ in 0..4 {
            b.deposit();
        }
        assert_eq!(b.available(), 2);
        for (json, message) in [
            (r#"{ "ratio": -1 }"#, "invalid `ratio`"),
            (
                r#"{ "ratio": 0.2, "ttl": "2m" }"#,
                "invalid `ttl`: must be from 1s to 60s",
            ),
            (r#"{ "ratio": 0.2, "ttl": 10 }"#, "`ttl`"),
            (
                r#"{ "ratio": 0.2, "min_retries_per_second": -0.5 }"#,
                "invalid `min_retries_per_second`",
            ),
            (
                r#"{ "ratio": 0 }"#,
                "invalid `ratio`: must be above 0 unless",
            ),
            (
                r#"{ "ratio": 0.2, "initial_tokens": 5 }"#,
                "invalid `initial_tokens`: cannot be combined with `ratio`",
            ),
            (
                r#"{ "preset": "aws-2026", "ratio": 0.2 }"#,
                "invalid `preset`: cannot be combined with `ratio`",
            ),
            (
                r#"{ "min_retries_per_second": 1 }"#,
                "invalid `min_retries_per_second`: only applies with `ratio`",
            ),
        ] {
            let e = budget(json).unwrap_err();
            assert!(e.contains(message), "{json}: {e}");
        }
        assert_eq!(
            budget(r#"{ "max_tokens": 25, "initial_tokens": 5 }"#)
                .unwrap()
                .available(),
            5
        );
    }
}
