//! `Deserialize` for the settings' values (feature `serde`): each reads what its `FromStr` reads,
//! so that a config file is held to the attribute's rules and messages. The runtime's config
//! module reads whole policies, breakers and budgets.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::{Backoff, HedgeAfter, HintMode, Jitter, LogError, PolicyError};

/// Read from `"fixed"`, `"linear"` or `"exponential"`, as [`FromStr`](std::str::FromStr).
///
/// ```
/// use reattempt::Backoff;
///
/// assert_eq!(serde_json::from_str::<Backoff>(r#""linear""#)?, Backoff::Linear);
/// assert!(serde_json::from_str::<Backoff>(r#""quadratic""#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de> Deserialize<'de> for Backoff {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BackoffVisitor;

        impl Visitor<'_> for BackoffVisitor {
            type Value = Backoff;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a backoff: "fixed", "linear" or "exponential""#)
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Backoff, E> {
                s.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(BackoffVisitor)
    }
}

/// Read from `"none"`, `"full"`, `"equal"`, `"decorrelated"`, or a factor in (0, 1], as a number
/// or a string, for [`Jitter::Proportional`].
///
/// ```
/// use reattempt::Jitter;
///
/// assert_eq!(serde_json::from_str::<Jitter>(r#""equal""#)?, Jitter::Equal);
/// assert_eq!(serde_json::from_str::<Jitter>("0.25")?, Jitter::Proportional(0.25));
/// assert_eq!(serde_json::from_str::<Jitter>("1")?, Jitter::Proportional(1.0));
/// let err = serde_json::from_str::<Jitter>("1.5").unwrap_err();
/// assert!(err.to_string().contains("invalid `jitter`: a jitter factor must be in (0, 1], got 1.5"));
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de> Deserialize<'de> for Jitter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct JitterVisitor;

        impl Visitor<'_> for JitterVisitor {
            type Value = Jitter;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    r#"a jitter: "none", "full", "equal", "decorrelated" or a factor in (0, 1]"#,
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Jitter, E> {
                // A number out of range gets the builder's message, not "unknown jitter".
                match s.parse::<f64>() {
                    Ok(f) => factor(f),
                    Err(_) => s.parse().map_err(E::custom),
                }
            }

            fn visit_f64<E: de::Error>(self, f: f64) -> Result<Jitter, E> {
                factor(f)
            }

            #[allow(clippy::cast_precision_loss, reason = "only 1 is in range")]
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Jitter, E> {
                factor(n as f64)
            }

            #[allow(clippy::cast_precision_loss, reason = "only 1 is in range")]
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Jitter, E> {
                factor(n as f64)
            }
        }

        fn factor<E: de::Error>(f: f64) -> Result<Jitter, E> {
            if Jitter::factor_is_valid(f) {
                Ok(Jitter::Proportional(f))
            } else {
                Err(E::custom(PolicyError::JitterFactorOutOfRange { factor: f }))
            }
        }

        // Any, not str: a factor may be written as a bare number.
        deserializer.deserialize_any(JitterVisitor)
    }
}

/// Read from `"none"`, `"type"` or `"debug"`, as [`FromStr`](std::str::FromStr).
///
/// ```
/// use reattempt::LogError;
///
/// assert_eq!(serde_json::from_str::<LogError>(r#""debug""#)?, LogError::Debug);
/// let err = serde_json::from_str::<LogError>(r#""display""#).unwrap_err();
/// assert!(err.to_string().contains(r#"unknown log_error `display`: expected "none", "type" or "debug""#));
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de> Deserialize<'de> for LogError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LogErrorVisitor;

        impl Visitor<'_> for LogErrorVisitor {
            type Value = LogError;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"what to log of an error: "none", "type" or "debug""#)
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<LogError, E> {
                s.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(LogErrorVisitor)
    }
}

/// Read from a duration (`"50ms"`) or a quantile (`"p95"`), as [`FromStr`](std::str::FromStr).
///
/// ```
/// use std::time::Duration;
/// use reattempt::HedgeAfter;
///
/// assert_eq!(serde_json::from_str::<HedgeAfter>(r#""p95""#)?, HedgeAfter::quantile(95.0));
/// assert_eq!(
///     serde_json::from_str::<HedgeAfter>(r#""50ms""#)?,
///     HedgeAfter::Fixed(Duration::from_millis(50)),
/// );
/// let err = serde_json::from_str::<HedgeAfter>(r#""p100""#).unwrap_err();
/// assert!(err.to_string().contains("invalid `hedge_after`"), "{err}");
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de> Deserialize<'de> for HedgeAfter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HedgeVisitor;

        impl Visitor<'_> for HedgeVisitor {
            type Value = HedgeAfter;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    r#"a hedge delay: a duration such as "50ms", or a quantile such as "p95""#,
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<HedgeAfter, E> {
                s.parse()
                    .map_err(|e| E::custom(format_args!("invalid `hedge_after`: {e}")))
            }
        }

        deserializer.deserialize_str(HedgeVisitor)
    }
}

/// Read from `"floor"` or `"clamp"` and a duration (`"clamp 5s"`), as [`FromStr`](std::str::FromStr).
///
/// ```
/// use reattempt::HintMode;
///
/// assert_eq!(serde_json::from_str::<HintMode>(r#""clamp 5s""#)?, HintMode::AWS_2026);
/// let err = serde_json::from_str::<HintMode>(r#""cap""#).unwrap_err();
/// assert!(err.to_string().contains("unknown hint_mode `cap`"), "{err}");
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de> Deserialize<'de> for HintMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HintVisitor;

        impl Visitor<'_> for HintVisitor {
            type Value = HintMode;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a hint mode: "floor", or "clamp" and a duration ("clamp 5s")"#)
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<HintMode, E> {
                s.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(HintVisitor)
    }
}
