//! The raw document: structs derived from the JSON's shape, whose leaves ([`Field`]) record what
//! is wrong with a value instead of failing, so that the checks after (each policy's
//! `from_raw`) can name the field at fault.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use ::tonic::Code;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::codes::{CODE_NAMES, Codes};
use super::error::{ServiceConfigError, invalid};

/// The value of a field that must be present.
pub(super) fn required<T: Clone>(
    field: Option<&Field<T>>,
    name: &str,
) -> Result<T, ServiceConfigError> {
    optional(field, name)?.ok_or_else(|| ServiceConfigError::Missing {
        field: name.to_owned(),
    })
}

/// The value of a field that may be absent.
pub(super) fn optional<T: Clone>(
    field: Option<&Field<T>>,
    name: &str,
) -> Result<Option<T>, ServiceConfigError> {
    field
        .map(|f| f.0.clone().map_err(|p| p.at(name)))
        .transpose()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawServiceConfig {
    pub(super) method_config: Option<Vec<RawMethodConfig>>,
    pub(super) retry_throttling: Option<RawThrottling>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawMethodConfig {
    pub(super) name: Option<Vec<RawName>>,
    pub(super) retry_policy: Option<RawRetryPolicy>,
    pub(super) hedging_policy: Option<RawHedgingPolicy>,
    pub(super) timeout: Option<Field<ProtoDuration>>,
}

#[derive(Deserialize)]
pub(super) struct RawName {
    pub(super) service: Option<Field<String>>,
    pub(super) method: Option<Field<String>>,
}

impl RawName {
    /// The path the name stands for, as grpc-go's `generatePath`: `"/service/method"`,
    /// `"/service/"`, or `""` for the default (no service, or an empty one, and no method).
    pub(super) fn path(&self) -> Result<String, ServiceConfigError> {
        let service = optional(self.service.as_ref(), "service")?.unwrap_or_default();
        let method = optional(self.method.as_ref(), "method")?.unwrap_or_default();
        match (service.is_empty(), method.is_empty()) {
            (true, true) => Ok(String::new()),
            (true, false) => Err(ServiceConfigError::MethodWithoutService {
                field: String::new(),
            }),
            (false, _) => Ok(format!("/{service}/{method}")),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawRetryPolicy {
    pub(super) max_attempts: Option<Field<i128>>,
    pub(super) initial_backoff: Option<Field<ProtoDuration>>,
    pub(super) max_backoff: Option<Field<ProtoDuration>>,
    pub(super) backoff_multiplier: Option<Field<f64>>,
    pub(super) retryable_status_codes: Option<Field<Codes>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawThrottling {
    pub(super) max_tokens: Option<Field<i128>>,
    pub(super) token_ratio: Option<Field<f64>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawHedgingPolicy {
    pub(super) max_attempts: Option<Field<i128>>,
    pub(super) hedging_delay: Option<Field<ProtoDuration>>,
    pub(super) non_fatal_status_codes: Option<Field<Codes>>,
}

/// What is wrong with one leaf value (its path is added by the caller).
#[derive(Debug, Clone)]
enum Problem {
    WrongType(&'static str),
    Duration {
        value: String,
        problem: &'static str,
    },
    UnknownCode(String),
    /// In a list, at this index.
    At(usize, Box<Problem>),
}

impl Problem {
    fn at(self, field: &str) -> ServiceConfigError {
        let field = field.to_owned();
        match self {
            Problem::WrongType(expected) => ServiceConfigError::WrongType { field, expected },
            Problem::Duration { value, problem } => ServiceConfigError::Duration {
                field,
                value,
                problem,
            },
            Problem::UnknownCode(value) => ServiceConfigError::UnknownCode { field, value },
            Problem::At(i, problem) => problem.at(&format!("{field}[{i}]")),
        }
    }
}

/// A leaf of the document: its value, or what is wrong with it. Reading it never fails on a
/// well-formed document, so that the check after can name the field.
#[derive(Debug, Clone)]
pub(super) struct Field<T>(Result<T, Problem>);

/// A leaf's type: what it makes of each kind of JSON value (by default, a type error).
trait Leaf: Sized {
    /// For "must be …".
    const EXPECTED: &'static str;

    fn from_str(_: &str) -> Result<Self, Problem> {
        Err(Problem::WrongType(Self::EXPECTED))
    }

    fn from_int(_: i128) -> Result<Self, Problem> {
        Err(Problem::WrongType(Self::EXPECTED))
    }

    fn from_float(_: f64) -> Result<Self, Problem> {
        Err(Problem::WrongType(Self::EXPECTED))
    }

    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Result<Self, Problem>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(Problem::WrongType(Self::EXPECTED)))
    }
}

impl<'de, T: Leaf> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LeafVisitor(PhantomData))
            .map(Field)
    }
}

struct LeafVisitor<T>(PhantomData<T>);

impl<'de, T: Leaf> Visitor<'de> for LeafVisitor<T> {
    type Value = Result<T, Problem>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(Problem::WrongType(T::EXPECTED)))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        Ok(T::from_int(i128::from(n)))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        Ok(T::from_int(i128::from(n)))
    }

    fn visit_i128<E: de::Error>(self, n: i128) -> Result<Self::Value, E> {
        Ok(T::from_int(n))
    }

    fn visit_u128<E: de::Error>(self, n: u128) -> Result<Self::Value, E> {
        Ok(T::from_int(i128::try_from(n).unwrap_or(i128::MAX)))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
        Ok(T::from_float(n))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(T::from_str(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(Problem::WrongType(T::EXPECTED)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::from_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(Problem::WrongType(T::EXPECTED)))
    }
}

/// A whole number (`maxAttempts`, `maxTokens`): a JSON integer, or a number with no fraction
/// (`2.0`).
impl Leaf for i128 {
    const EXPECTED: &'static str = "a whole number";

    fn from_int(n: i128) -> Result<Self, Problem> {
        Ok(n)
    }

    fn from_float(n: f64) -> Result<Self, Problem> {
        if n.is_finite() && n.fract() == 0.0 {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "whole; saturates beyond i128, which no rule tells from i128::MAX"
            )]
            Ok(n as i128)
        } else {
            Err(Problem::WrongType(Self::EXPECTED))
        }
    }
}

/// Any number (`backoffMultiplier`, `tokenRatio`).
impl Leaf for f64 {
    const EXPECTED: &'static str = "a number";

    #[allow(clippy::cast_precision_loss, reason = "as exact as JSON's own numbers")]
    fn from_int(n: i128) -> Result<Self, Problem> {
        Ok(n as f64)
    }

    fn from_float(n: f64) -> Result<Self, Problem> {
        Ok(n)
    }
}

/// A name's `service` or `method`.
impl Leaf for String {
    const EXPECTED: &'static str = "a string";

    fn from_str(s: &str) -> Result<Self, Problem> {
        Ok(s.to_owned())
    }
}

/// A list of status codes: names (case-insensitive, A6) or numbers.
impl Leaf for Codes {
    const EXPECTED: &'static str = "an array of status codes";

    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Result<Self, Problem>, A::Error> {
        let mut codes = Ok(Codes::default());
        let mut i = 0;
        while let Some(Field(code)) = seq.next_element::<Field<Code1>>()? {
            codes = match (codes, code) {
                (Ok(set), Ok(Code1(code))) => Ok(set.with(code)),
                (Ok(_), Err(problem)) => Err(Problem::At(i, Box::new(problem))),
                (Err(problem), _) => Err(problem),
            };
            i += 1;
        }
        Ok(codes)
    }
}

/// One status code in a list.
#[derive(Clone)]
struct Code1(Code);

impl Leaf for Code1 {
    const EXPECTED: &'static str = "a status code name or number";

    fn from_str(s: &str) -> Result<Self, Problem> {
        CODE_NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, code)| Code1(code))
            .ok_or_else(|| Problem::UnknownCode(format!("{s:?}")))
    }

    fn from_int(n: i128) -> Result<Self, Problem> {
        usize::try_from(n)
            .ok()
            .and_then(|i| CODE_NAMES.get(i))
            .map(|&(_, code)| Code1(code))
            .ok_or_else(|| Problem::UnknownCode(n.to_string()))
    }

    fn from_float(n: f64) -> Result<Self, Problem> {
        if n.is_finite() && n.fract() == 0.0 && (0.0..=16.0).contains(&n) {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "a whole number from 0 to 16"
            )]
            return Self::from_int(n as i128);
        }
        Err(Problem::UnknownCode(n.to_string()))
    }
}

/// A protobuf JSON duration (`"0.1s"`, `"-1.5s"`): its sign and size.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProtoDuration {
    negative: bool,
    magnitude: Duration,
}

impl ProtoDuration {
    /// A positive (or zero) duration given in code.
    pub(super) fn positive(magnitude: Duration) -> Self {
        ProtoDuration {
            negative: false,
            magnitude,
        }
    }

    /// The duration, if greater than 0 (the backoffs).
    pub(super) fn positive_or(self, field: &str) -> Result<Duration, ServiceConfigError> {
        if self.negative || self.magnitude.is_zero() {
            return Err(invalid(field, "must be greater than 0"));
        }
        Ok(self.magnitude)
    }

    /// The duration, if not negative (`hedgingDelay`, `timeout`); a relative error otherwise.
    pub(super) fn non_negative(self) -> Result<Duration, ServiceConfigError> {
        if self.negative && !self.magnitude.is_zero() {
            return Err(invalid("", "must not be negative"));
        }
        Ok(self.magnitude)
    }
}

impl Leaf for ProtoDuration {
    const EXPECTED: &'static str = r#"a duration string such as "0.1s""#;

    fn from_str(s: &str) -> Result<Self, Problem> {
        parse_proto_duration(s).map_err(|problem| Problem::Duration {
            value: s.to_owned(),
            problem,
        })
    }
}

/// The largest duration protobuf's `Duration` holds: 10,000 years.
const MAX_PROTO_SECONDS: u64 = 315_576_000_000;

/// Protobuf's JSON form of a `Duration`: an optional `-`, seconds with up to 9 fractional
/// digits, then `s` (`"1s"`, `"0.1s"`, `"1.000340012s"`). As grpc-go's
/// `internal/serviceconfig.Duration`: either part of the number may be empty (`".5s"`, `"5.s"`),
/// not both; at most 315576000000 seconds.
fn parse_proto_duration(s: &str) -> Result<ProtoDuration, &'static str> {
    let number = s
        .strip_suffix('s')
        .ok_or(r#"must be seconds ending in `s`, as "0.1s""#)?;
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return Err(r#"must be a decimal number of seconds ending in `s`, as "0.1s""#);
    }
    if whole.is_empty() && fraction.is_empty() {
        return Err("has no digits");
    }
    if fraction.len() > 9 {
        return Err("has more than 9 fractional digits");
    }
    let secs = if whole.is_empty() {
        0
    } else {
        whole
            .parse::<u64>()
            .ok()
            .filter(|&secs| secs <= MAX_PROTO_SECONDS)
            .ok_or("is out of range (at most 315576000000s)")?
    };
    let nanos = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0_u32, |n, digit| n * 10 + u32::from(digit - b'0'));
    Ok(ProtoDuration {
        negative,
        magnitude: Duration::new(secs, nanos),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_durations() {
        let ok = |s: &str| {
            let d = parse_proto_duration(s).unwrap();
            (d.negative, d.magnitude)
        };
        assert_eq!(ok("0.1s"), (false, Duration::from_millis(100)));
        assert_eq!(ok("1.000340012s"), (false, Duration::new(1, 340_012)));
        assert_eq!(ok("-2.5s"), (true, Duration::from_millis(2500)));
        assert_eq!(ok("0s"), (false, Duration::ZERO));
        assert_eq!(
            ok("315576000000.999999999s").1,
            Duration::new(315_576_000_000, 999_999_999)
        );
        for bad in ["", "s", "1", "1ms", "--1s", "1.2.3s", "١s", "1_000s"] {
            assert!(parse_proto_duration(bad).is_err(), "{bad}");
        }
    }
}
