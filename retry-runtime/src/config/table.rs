//! The raw tables a config file holds: one per builder, its keys the builder's method names,
//! each key read by a named `Setting` (so that every error names the key), and a table read
//! from a map only.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use retry_rules::{Backoff, HedgeAfter, HintMode, Jitter, LogError};

use crate::schedule::preset::Preset;

/// A raw table read from a map only: a derived struct also takes a sequence (its fields by
/// position), which a config file should not be able to do by accident.
pub(super) fn table<'de, T, D>(deserializer: D) -> Result<T, D::Error>
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
pub(super) trait Expecting {
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
pub(super) struct RawPolicy {
    #[serde(default, deserialize_with = "preset")]
    pub(super) preset: Option<Preset>,
    #[serde(default, deserialize_with = "key::max_attempts")]
    pub(super) max_attempts: Option<u32>,
    #[serde(default, deserialize_with = "key::delay")]
    pub(super) delay: Option<Duration>,
    #[serde(default, deserialize_with = "key::throttling_delay")]
    pub(super) throttling_delay: Option<Duration>,
    #[serde(default)]
    pub(super) backoff: Option<Backoff>,
    #[serde(default, deserialize_with = "key::multiplier")]
    pub(super) multiplier: Option<f64>,
    #[serde(default, deserialize_with = "key::max_delay")]
    pub(super) max_delay: Option<Duration>,
    #[serde(default)]
    pub(super) jitter: Option<Jitter>,
    #[serde(default, deserialize_with = "key::timeout")]
    pub(super) timeout: Option<Duration>,
    #[serde(default, deserialize_with = "key::max_elapsed")]
    pub(super) max_elapsed: Option<Duration>,
    #[serde(default)]
    pub(super) log_error: Option<LogError>,
    #[serde(default)]
    pub(super) hedge_after: Option<HedgeAfter>,
    pub(super) one_layer: Option<bool>,
    pub(super) idempotent: Option<bool>,
    #[serde(default)]
    pub(super) hint_mode: Option<HintMode>,
    pub(super) long_polling: Option<bool>,
    #[serde(default, deserialize_with = "inject_faults")]
    pub(super) inject_faults: Option<RawFaults>,
}

/// An `inject_faults` table (feature `testing`): `rate`, `latency`, `latency_rate`, `seed`,
/// checked by [`FaultInjectionBuilder::build`](crate::testing::FaultInjectionBuilder::build).
#[cfg(feature = "testing")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFaults {
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
    pub(super) fn build(self) -> Result<crate::testing::FaultInjection, crate::ConfigError> {
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
pub(super) enum RawFaults {}

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
pub(super) struct RawBreaker {
    #[serde(default, deserialize_with = "key::failure_threshold")]
    pub(super) failure_threshold: Option<u32>,
    #[serde(default, deserialize_with = "key::failure_rate")]
    pub(super) failure_rate: Option<f64>,
    #[serde(default, deserialize_with = "key::sliding_window")]
    pub(super) sliding_window: Option<u32>,
    #[serde(default, deserialize_with = "key::minimum_calls")]
    pub(super) minimum_calls: Option<u32>,
    #[serde(default, deserialize_with = "key::reset_timeout")]
    pub(super) reset_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "key::half_open_probes")]
    pub(super) half_open_probes: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBudget {
    #[serde(default, deserialize_with = "preset")]
    pub(super) preset: Option<Preset>,
    #[serde(default, deserialize_with = "key::max_tokens")]
    pub(super) max_tokens: Option<u32>,
    #[serde(default, deserialize_with = "key::retry_cost")]
    pub(super) retry_cost: Option<u32>,
    #[serde(default, deserialize_with = "key::timeout_cost")]
    pub(super) timeout_cost: Option<u32>,
    #[serde(default, deserialize_with = "key::throttling_cost")]
    pub(super) throttling_cost: Option<u32>,
    #[serde(default, deserialize_with = "key::success_deposit")]
    pub(super) success_deposit: Option<u32>,
    #[serde(default, deserialize_with = "key::initial_tokens")]
    pub(super) initial_tokens: Option<u32>,
    #[serde(default, deserialize_with = "key::ratio")]
    pub(super) ratio: Option<f64>,
    #[serde(default, deserialize_with = "key::min_retries_per_second")]
    pub(super) min_retries_per_second: Option<f64>,
    #[serde(default, deserialize_with = "key::ttl")]
    pub(super) ttl: Option<Duration>,
}

/// One reader per key, each a named `Setting`; `null` reads as a missing key.
mod key {
    use std::time::Duration;

    use serde::de::{DeserializeSeed, Deserializer};

    use crate::config::setting::{Count, HumanDuration, Number, Optional, Setting};

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

#[cfg(test)]
mod tests {
    use crate::{RetryBudget, RetryPolicy};

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
        assert_eq!(f.latency(), Some(std::time::Duration::from_millis(50)));
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
}
