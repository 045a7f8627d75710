//! The reader of one key's value: a whole number, a number or a duration with a unit, each
//! named by its key so that an error says which key is wrong and how to write it.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// The reader of one key's value: a [`Count`], a [`Number`] or a [`HumanDuration`], named so
/// that its errors can say which key is wrong.
pub(super) struct Setting<K> {
    key: &'static str,
    kind: PhantomData<K>,
}

impl<K> Setting<K> {
    pub(super) const fn new(key: &'static str) -> Self {
        Setting {
            key,
            kind: PhantomData,
        }
    }
}

/// A whole number that fits a `u32`.
pub(super) struct Count;
/// Any number, integers included.
pub(super) struct Number;
/// A duration with a unit: `"250ms"`.
pub(super) struct HumanDuration;

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
pub(super) struct Optional<S>(pub(super) S);

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
    use std::time::Duration;

    use crate::RetryPolicy;

    fn policy(json: &str) -> Result<RetryPolicy, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
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
}
