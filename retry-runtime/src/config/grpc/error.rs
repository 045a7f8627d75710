//! What is wrong with a service config, and where in the document.

use std::fmt;

/// A service config that cannot be used: not JSON, not a service config's shape, or a field
/// that breaks one of [gRFC A6](https://github.com/grpc/proposal/blob/master/A6-client-retries.md)'s
/// rules. Its message starts with the field's path in the document
/// (`methodConfig[0].retryPolicy.maxAttempts: must be at least 2`); [`field`](Self::field) gives
/// the path alone.
///
/// ```
/// use reattempt::tonic::{ServiceConfig, ServiceConfigError};
///
/// let err = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{"service": "s"}],
///     "hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": ["UNAVAILABLE", "NOPE"]}}]}"#)
///     .unwrap_err();
/// assert_eq!(err, ServiceConfigError::UnknownCode {
///     field: "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[1]".into(),
///     value: r#""NOPE""#.into(),
/// });
/// assert!(ServiceConfig::from_json("not json").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceConfigError {
    /// Not JSON, or JSON whose shape is not a service config's (a `methodConfig` that is not an
    /// array of objects…): serde's message, with the line and column.
    Json {
        /// What serde said.
        message: String,
    },
    /// A required field is absent (or `null`).
    Missing {
        /// The field's path.
        field: String,
    },
    /// A value of the wrong JSON type.
    WrongType {
        /// The field's path.
        field: String,
        /// What it must be ("a whole number", …).
        expected: &'static str,
    },
    /// A value that breaks one of A6's rules.
    Invalid {
        /// The field's path.
        field: String,
        /// The rule ("must be at least 2", …).
        rule: &'static str,
    },
    /// A duration not in protobuf's JSON form: seconds with up to 9 fractional digits and an
    /// `s`, as `"0.1s"`.
    Duration {
        /// The field's path.
        field: String,
        /// The string as given.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A status code that is no gRPC code (by name, case-insensitive, or number 0 to 16).
    UnknownCode {
        /// The field's path (with its index in the list).
        field: String,
        /// The code as given (a name keeps its quotes).
        value: String,
    },
    /// A method config with both a `retryPolicy` and a `hedgingPolicy` (A6 allows one).
    RetryAndHedging {
        /// The method config's path.
        field: String,
    },
    /// A name (service and method, service, or the default) given by two entries.
    DuplicateName {
        /// The second name's path.
        field: String,
        /// The path it stands for: `"/service/method"`, `"/service/"`, or `""` (the default).
        name: String,
    },
    /// A name with a `method` and no `service`.
    MethodWithoutService {
        /// The name's path.
        field: String,
    },
}

impl ServiceConfigError {
    /// The path of the field at fault (`methodConfig[0].retryPolicy.maxAttempts`), relative to
    /// the policy for one built in code (`maxAttempts`); empty for [`Json`](Self::Json).
    ///
    /// ```
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let err = ServiceConfig::from_json(r#"{"retryThrottling": {"maxTokens": 10}}"#).unwrap_err();
    /// assert_eq!(err.field(), "retryThrottling.tokenRatio");
    /// assert_eq!(err.to_string(), "retryThrottling.tokenRatio: is required");
    /// ```
    pub fn field(&self) -> &str {
        match self {
            ServiceConfigError::Json { .. } => "",
            ServiceConfigError::Missing { field }
            | ServiceConfigError::WrongType { field, .. }
            | ServiceConfigError::Invalid { field, .. }
            | ServiceConfigError::Duration { field, .. }
            | ServiceConfigError::UnknownCode { field, .. }
            | ServiceConfigError::RetryAndHedging { field }
            | ServiceConfigError::DuplicateName { field, .. }
            | ServiceConfigError::MethodWithoutService { field } => field,
        }
    }

    /// The error with `prefix` before its field's path.
    pub(super) fn at(mut self, prefix: &str) -> Self {
        match &mut self {
            ServiceConfigError::Json { .. } => {}
            ServiceConfigError::Missing { field }
            | ServiceConfigError::WrongType { field, .. }
            | ServiceConfigError::Invalid { field, .. }
            | ServiceConfigError::Duration { field, .. }
            | ServiceConfigError::UnknownCode { field, .. }
            | ServiceConfigError::RetryAndHedging { field }
            | ServiceConfigError::DuplicateName { field, .. }
            | ServiceConfigError::MethodWithoutService { field } => {
                *field = match (prefix.is_empty(), field.is_empty(), field.starts_with('[')) {
                    (true, _, _) => std::mem::take(field),
                    (false, true, _) => prefix.to_owned(),
                    (false, false, true) => format!("{prefix}{field}"),
                    (false, false, false) => format!("{prefix}.{field}"),
                };
            }
        }
        self
    }
}

impl fmt::Display for ServiceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field().is_empty() {
            write!(f, "{}: ", self.field())?;
        }
        match self {
            ServiceConfigError::Json { message } => {
                write!(f, "not a gRPC service config: {message}")
            }
            ServiceConfigError::Missing { .. } => f.write_str("is required"),
            ServiceConfigError::WrongType { expected, .. } => write!(f, "must be {expected}"),
            ServiceConfigError::Invalid { rule, .. } => f.write_str(rule),
            ServiceConfigError::Duration { value, problem, .. } => {
                write!(f, "invalid duration {value:?}: {problem}")
            }
            ServiceConfigError::UnknownCode { value, .. } => {
                write!(f, "unknown status code {value}")
            }
            ServiceConfigError::RetryAndHedging { .. } => {
                f.write_str("has both retryPolicy and hedgingPolicy (A6 allows one)")
            }
            ServiceConfigError::DuplicateName { name, .. } => match name.as_str() {
                "" => f.write_str("a second default method config"),
                _ => write!(f, "names {name} again (an earlier entry names it)"),
            },
            ServiceConfigError::MethodWithoutService { .. } => {
                f.write_str("has a method but no service")
            }
        }
    }
}

impl std::error::Error for ServiceConfigError {}

/// An error about `field`, relative to the part being checked.
pub(super) fn invalid(field: &str, rule: &'static str) -> ServiceConfigError {
    ServiceConfigError::Invalid {
        field: field.to_owned(),
        rule,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_paths_join_with_dots_and_brackets() {
        let e = invalid("maxAttempts", "must be at least 2").at("retryPolicy");
        assert_eq!(
            e.at("methodConfig[3]").field(),
            "methodConfig[3].retryPolicy.maxAttempts"
        );
        assert_eq!(invalid("", "x").at("timeout").field(), "timeout");
        assert_eq!(invalid("[2]", "x").at("codes").field(), "codes[2]");
        let json = ServiceConfigError::Json {
            message: "m".into(),
        };
        assert_eq!(json.clone().at("x"), json);
    }
}
