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

#[cfg(feature = "tonic")]
pub(crate) mod grpc;

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

use retry_rules::{Backoff, HedgeAfter, HintMode, Jitter, LogError, PolicySettings};

use crate::ConfigError;
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::schedule::policy::{RetryPolicy, RetryPolicyBuilder};
use crate::schedule::preset::Preset;

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

/// A raw table read from a map only: a derived struct also takes a sequence (its fields by
/// position), which a config file should not be able to do by accident.
fn table<'de, T, D>(deserializer: D) -> Result<T, D::Error>
where
    T: Deserialize<'de> + Expecting,
    D: Deserializer<'de>,
{
    struct Table<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de> + Expecting> Visitor<'de> for Table<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(T::EXPECTING)
        }

        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }

    deserializer.deserialize_map(Table(PhantomData))
}

/// What a raw table is, for "invalid type: …, expected …".
trait Expecting {
    const EXPECTING: &'static str;
}

impl Expecting for RawPolicy {
    const EXPECTING: &'static str =
        "a retry policy: a table of settings such as `max_attempts` and `delay`";
}

impl Expecting for RawBreaker {
    const EXPECTING: &'static str =
        "a circuit breaker: a table of settings such as `failure_threshold` and `reset_timeout`";
}

impl Expecting for RawBudget {
    const EXPECTING: &'static str =
        "a retry budget: a table of settings such as `max_tokens` and `retry_cost`";
}

// The raw tables. Their keys are the builders' method names; a key's reader is chosen per field
// (below) because `deserialize_with` cannot pass the key's name, and every error should name it.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default, deserialize_with = "preset")]
    preset: Option<Preset>,
    #[serde(default, deserialize_with = "key::max_attempts")]
    max_attempts: Option<u32>,
    #[serde(default, deserialize_with = "key::delay")]
    delay: Option<Duration>,
    #[serde(default, deserialize_with = "key::throttling_delay")]
    throttling_delay: Option<Duration>,
    #[serde(default)]
    backoff: Option<Backoff>,
    #[serde(default, deserialize_with = "key::multiplier")]
    multiplier: Option<f64>,
    #[serde(default, deserialize_with = "key::max_delay")]
    max_delay: Option<Duration>,
    #[serde(default)]
    jitter: Option<Jitter>,
    #[serde(default, deserialize_with = "key::timeout")]
    timeout: Option<Duration>,
    #[serde(default, deserialize_with = "key::max_elapsed")]
    max_elapsed: Option<Duration>,
    #[serde(default)]
    log_error: Option<LogError>,
    #[serde(default)]
    hedge_after: Option<HedgeAfter>,
    one_layer: Option<bool>,
    idempotent: Option<bool>,
    #[serde(default)]
    hint_mode: Option<HintMode>,
    long_polling: Option<bool>,
    #[serde(default, deserialize_with = "inject_faults")]
    inject_faults: Option<RawFaults>,
}

/// An `inject_faults` table (feature `testing`): `rate`, `latency`, `latency_rate`, `seed`,
/// checked by [`FaultInjectionBuilder::build`](crate::testing::FaultInjectionBuilder::build).
#[cfg(feature = "testing")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFaults {
    #[serde(default, deserialize_with = "key::rate")]
    rate: Option<f64>,
    #[serde(default, deserialize_with = "key::latency")]
    latency: Option<Duration>,
    #[serde(default, deserialize_with = "key::latency_rate")]
    latency_rate: Option<f64>,
    #[serde(default)]
    seed: Option<u64>,
}

#[cfg(feature = "testing")]
impl RawFaults {
    fn build(self) -> Result<crate::testing::FaultInjection, crate::ConfigError> {
        let mut b = crate::testing::FaultInjection::builder();
        if let Some(r) = self.rate {
            b = b.rate(r);
        }
        if let Some(l) = self.latency {
            b = b.latency(l);
        }
        if let Some(r) = self.latency_rate {
            b = b.latency_rate(r);
        }
        if let Some(s) = self.seed {
            b = b.seed(s);
        }
        b.build()
    }
}

#[cfg(feature = "testing")]
fn inject_faults<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RawFaults>, D::Error> {
    Option::deserialize(d)
}

/// Without feature `testing` an `inject_faults` key is refused: a config that asks for faults
/// must not silently run without them.
#[cfg(not(feature = "testing"))]
enum RawFaults {}

#[cfg(not(feature = "testing"))]
fn inject_faults<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RawFaults>, D::Error> {
    let _ = de::IgnoredAny::deserialize(d)?;
    Err(de::Error::custom(
        "`inject_faults` needs reattempt's `testing` feature (fault injection is compiled in only \
         with it): enable the feature, or remove the key",
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBreaker {
    #[serde(default, deserialize_with = "key::failure_threshold")]
    failure_threshold: Option<u32>,
    #[serde(default, deserialize_with = "key::failure_rate")]
    failure_rate: Option<f64>,
    #[serde(default, deserialize_with = "key::sliding_window")]
    sliding_window: Option<u32>,
    #[serde(default, deserialize_with = "key::minimum_calls")]
    minimum_calls: Option<u32>,
    #[serde(default, deserialize_with = "key::reset_timeout")]
    reset_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "key::half_open_probes")]
    half_open_probes: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudget {
    #[serde(default, deserialize_with = "preset")]
    preset: Option<Preset>,
    #[serde(default, deserialize_with = "key::max_tokens")]
    max_tokens: Option<u32>,
    #[serde(default, deserialize_with = "key::retry_cost")]
    retry_cost: Option<u32>,
    #[serde(default, deserialize_with = "key::timeout_cost")]
    timeout_cost: Option<u32>,
    #[serde(default, deserialize_with = "key::throttling_cost")]
    throttling_cost: Option<u32>,
    #[serde(default, deserialize_with = "key::success_deposit")]
    success_deposit: Option<u32>,
    #[serde(default, deserialize_with = "key::initial_tokens")]
    initial_tokens: Option<u32>,
    #[serde(default, deserialize_with = "key::ratio")]
    ratio: Option<f64>,
    #[serde(default, deserialize_with = "key::min_retries_per_second")]
    min_retries_per_second: Option<f64>,
    #[serde(default, deserialize_with = "key::ttl")]
    ttl: Option<Duration>,
}

/// One reader per key, each a named [`Setting`]; `null` reads as a missing key.
mod key {
    use std::time::Duration;

    use serde::de::{DeserializeSeed, Deserializer};

    use super::{Count, HumanDuration, Number, Optional, Setting};

    macro_rules! keys {
        ($($name:ident: $kind:ident -> $ty:ty),* $(,)?) => {$(
            pub(super) fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$ty>, D::Error> {
                Optional(Setting::<$kind>::new(stringify!($name))).deserialize(d)
            }
        )*};
    }

    keys! {
        max_attempts: Count -> u32,
        delay: HumanDuration -> Duration,
        throttling_delay: HumanDuration -> Duration,
        multiplier: Number -> f64,
        max_delay: HumanDuration -> Duration,
        timeout: HumanDuration -> Duration,
        max_elapsed: HumanDuration -> Duration,
        failure_threshold: Count -> u32,
        failure_rate: Number -> f64,
        sliding_window: Count -> u32,
        minimum_calls: Count -> u32,
        reset_timeout: HumanDuration -> Duration,
        half_open_probes: Count -> u32,
        max_tokens: Count -> u32,
        retry_cost: Count -> u32,
        timeout_cost: Count -> u32,
        throttling_cost: Count -> u32,
        success_deposit: Count -> u32,
        initial_tokens: Count -> u32,
        ratio: Number -> f64,
        min_retries_per_second: Number -> f64,
        ttl: HumanDuration -> Duration,
    }

    #[cfg(feature = "testing")]
    keys! {
        rate: Number -> f64,
        latency: HumanDuration -> Duration,
        latency_rate: Number -> f64,
    }
}

/// A `preset` key: a preset's name ([`Preset`]), which the table's other keys then change.
fn preset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Preset>, D::Error> {
    let name: Option<String> = Option::deserialize(d)?;
    name.map(|n| n.parse::<Preset>().map_err(de::Error::custom))
        .transpose()
}

/// The reader of one key's value: a [`Count`], a [`Number`] or a [`HumanDuration`], named so
/// that its errors can say which key is wrong.
struct Setting<K> {
    key: &'static str,
    kind: PhantomData<K>,
}

impl<K> Setting<K> {
    const fn new(key: &'static str) -> Self {
        Setting {
            key,
            kind: PhantomData,
        }
    }
}

/// A whole number that fits a `u32`.
struct Count;
/// Any number, integers included.
struct Number;
/// A duration with a unit: `"250ms"`.
struct HumanDuration;

impl Visitor<'_> for Setting<Count> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a whole number for `{}`", self.key)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<u32, E> {
        u32::try_from(n).map_err(|_| self.too_large(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<u32, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(self.negative(n)),
        }
    }

    // A format with big integers (TOML reads 2⁶⁴ as an i128): out of range, not "not a number".
    fn visit_u128<E: de::Error>(self, n: u128) -> Result<u32, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(self.too_large(n)),
        }
    }

    fn visit_i128<E: de::Error>(self, n: i128) -> Result<u32, E> {
        match u128::try_from(n) {
            Ok(n) => self.visit_u128(n),
            Err(_) => Err(self.negative(n)),
        }
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<u32, E> {
        // A whole number too large for the format's integers (JSON reads 2⁶⁴ as a float) is out
        // of range, like any other.
        if n.is_finite() && n.fract() == 0.0 {
            if n < 0.0 {
                return Err(self.negative(format_args!("{n:.0}")));
            }
            if n > f64::from(u32::MAX) {
                return Err(self.too_large(format_args!("{n:.0}")));
            }
        }
        Err(E::custom(format_args!(
            "invalid `{}`: must be a whole number, got {n:?}",
            self.key
        )))
    }
}

impl Setting<Count> {
    fn too_large<E: de::Error>(&self, n: impl fmt::Display) -> E {
        // The limit the key really has: `max_attempts` is bounded by the policy, below `u32::MAX`.
        let limit = if self.key == "max_attempts" {
            crate::RetryPolicy::MAX_ATTEMPTS
        } else {
            u32::MAX
        };
        E::custom(format_args!(
            "invalid `{}`: must be at most {limit}, got {n}",
            self.key
        ))
    }

    fn negative<E: de::Error>(&self, n: impl fmt::Display) -> E {
        E::custom(format_args!(
            "invalid `{}`: must be a whole number ≥ 0, got {n}",
            self.key
        ))
    }
}

impl<'de> DeserializeSeed<'de> for Setting<Count> {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_u32(self)
    }
}

impl Visitor<'_> for Setting<Number> {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a number for `{}`", self.key)
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<f64, E> {
        Ok(n)
    }

    #[allow(
        clippy::cast_precision_loss,
        reason = "as exact as the config's f64 would be"
    )]
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<f64, E> {
        Ok(n as f64)
    }

    #[allow(
        clippy::cast_precision_loss,
        reason = "as exact as the config's f64 would be"
    )]
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<f64, E> {
        Ok(n as f64)
    }
}

impl<'de> DeserializeSeed<'de> for Setting<Number> {
    type Value = f64;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_f64(self)
    }
}

impl Setting<HumanDuration> {
    /// A bare number has no unit; guessing one (seconds? milliseconds?) would hide a mistake.
    fn unitless<E: de::Error>(&self, n: impl fmt::Display) -> E {
        E::custom(format_args!(
            "invalid `{key}`: a duration needs a unit, as a string: write \"{n}ms\" or \"{n}s\", not {n}",
            key = self.key
        ))
    }
}

impl Visitor<'_> for Setting<HumanDuration> {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            r#"a duration with a unit, like "250ms" or "1m 30s", for `{}`"#,
            self.key
        )
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Duration, E> {
        // Overflow ("10000000000000 years") is an error, never a panic.
        crate::parse_duration(s).map_err(|e| {
            E::custom(format_args!(
                "invalid duration {s:?} for `{}`: {e}; write it like \"250ms\"",
                self.key
            ))
        })
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Duration, E> {
        Err(self.unitless(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Duration, E> {
        Err(self.unitless(n))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Duration, E> {
        Err(self.unitless(n))
    }
}

impl<'de> DeserializeSeed<'de> for Setting<HumanDuration> {
    type Value = Duration;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Duration, D::Error> {
        // Any, not str, so that a bare number reaches `unitless` and its advice.
        d.deserialize_any(self)
    }
}

/// A [`Setting`] that may be `null`, read as a missing key.
struct Optional<S>(S);

impl<'de, S> Visitor<'de> for Optional<S>
where
    S: Visitor<'de> + DeserializeSeed<'de>,
{
    type Value = Option<<S as DeserializeSeed<'de>>::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

impl<'de, S> DeserializeSeed<'de> for Optional<S>
where
    S: Visitor<'de> + DeserializeSeed<'de>,
{
    type Value = Option<<S as DeserializeSeed<'de>>::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> Result<RetryPolicy, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[cfg(not(feature = "testing"))]
    #[test]
    fn inject_faults_is_refused_without_the_testing_feature() {
        let err = policy(r#"{ "inject_faults": { "rate": 0.1 } }"#).unwrap_err();
        assert!(
            err.contains("`inject_faults` needs reattempt's `testing` feature"),
            "{err}"
        );
    }

    #[cfg(feature = "testing")]
    #[test]
    fn inject_faults_reads_its_table_and_refuses_unknown_keys() {
        let p = policy(r#"{ "inject_faults": { "rate": 0.1, "latency": "50ms", "latency_rate": 0.2, "seed": 7 } }"#)
            .unwrap();
        let f = p.fault_injection().unwrap();
        assert_eq!((f.rate(), f.latency_rate(), f.seed()), (0.1, 0.2, 7));
        assert_eq!(f.latency(), Some(Duration::from_millis(50)));
        let err = policy(r#"{ "inject_faults": { "ratio": 0.1 } }"#).unwrap_err();
        assert!(err.contains("unknown field `ratio`"), "{err}");
        let err = policy(r#"{ "inject_faults": { "latency": 50 } }"#).unwrap_err();
        assert!(
            err.contains("invalid `latency`: a duration needs a unit"),
            "{err}"
        );
        assert!(
            policy(r#"{ "inject_faults": null }"#)
                .unwrap()
                .fault_injection()
                .is_none()
        );
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
    fn durations_read_humantime_strings() {
        let p = policy(r#"{ "delay": "1m 30s", "max_delay": "2h", "timeout": "1.5s" }"#).unwrap();
        assert_eq!(p.delay(), Duration::from_secs(90));
        assert_eq!(p.max_delay(), Duration::from_secs(7200));
        assert_eq!(p.timeout(), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn null_is_a_missing_key() {
        let p = policy(r#"{ "delay": null, "max_attempts": null, "jitter": null }"#).unwrap();
        assert_eq!(p, RetryPolicy::default());
    }

    #[test]
    fn a_bare_number_for_a_duration_asks_for_a_unit() {
        for json in [r#"{"delay": 200}"#, r#"{"delay": -3}"#, r#"{"delay": 0.5}"#] {
            let e = policy(json).unwrap_err();
            assert!(
                e.contains("invalid `delay`: a duration needs a unit"),
                "{e}"
            );
        }
        let e = policy(r#"{"delay": 200}"#).unwrap_err();
        assert!(e.contains(r#"write "200ms" or "200s""#), "{e}");
    }

    #[test]
    fn counts_name_their_key_and_say_what_is_wrong() {
        let e = policy(r#"{"max_attempts": -1}"#).unwrap_err();
        assert!(
            e.contains("invalid `max_attempts`: must be a whole number ≥ 0, got -1"),
            "{e}"
        );
        let e = policy(r#"{"max_attempts": 4294967296}"#).unwrap_err();
        assert!(
            e.contains("invalid `max_attempts`: must be at most 67108863"),
            "{e}"
        );
        let e = policy(r#"{"max_attempts": 2.5}"#).unwrap_err();
        assert!(
            e.contains("invalid `max_attempts`: must be a whole number, got 2.5"),
            "{e}"
        );
        let e = policy(r#"{"max_attempts": "3"}"#).unwrap_err();
        assert!(
            e.contains("expected a whole number for `max_attempts`"),
            "{e}"
        );
    }

    #[test]
    fn numbers_take_integers_and_reject_text() {
        assert!((policy(r#"{"multiplier": 3}"#).unwrap().multiplier() - 3.0).abs() < f64::EPSILON);
        let e = policy(r#"{"multiplier": "3"}"#).unwrap_err();
        assert!(e.contains("expected a number for `multiplier`"), "{e}");
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

    #[test]
    fn huge_durations_are_errors_or_values_never_panics() {
        let p = policy(r#"{"delay": "584 years", "max_elapsed": "584 years"}"#).unwrap();
        assert_eq!(
            p.max_delay(),
            p.delay(),
            "the default ceiling rises to the delay"
        );
        assert_eq!(p.delays().count(), 2);
        let e = policy(r#"{"timeout": "100000000000000 years"}"#).unwrap_err();
        assert!(
            e.contains("invalid duration") && e.contains("`timeout`"),
            "{e}"
        );
    }

    #[test]
    fn only_a_table_is_read_not_a_list_by_position() {
        for json in ["[1]", "[]", "3"] {
            let e = policy(json).unwrap_err();
            assert!(e.contains("expected a retry policy: a table"), "{e}");
        }
        let e = serde_json::from_str::<RetryBudget>("[1, 2]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a retry budget: a table"), "{e}");
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
