//! What a call's events say about its error: [`LogError`].

/// What the retry and give-up events say about the error; set with
/// `RetryPolicyBuilder::log_error`, with `#[retryable(log_error = "debug")]`, or in a config file
/// as `log_error = "none" | "type" | "debug"`.
///
/// The default logs nothing that can carry a secret: an error's `Debug` (and often its
/// `Display`) can hold a URL with its query, a header, a request body. There is no `Display`
/// choice: the runtime only asks errors for `Debug`, and a `reqwest::Error`'s `Display` shows
/// its URL too.
///
/// ```
/// use reattempt::LogError;
///
/// assert_eq!(LogError::default(), LogError::TypeName);
/// assert_eq!("debug".parse::<LogError>(), Ok(LogError::Debug));
/// assert_eq!(LogError::TypeName.to_string(), "type");
/// assert!("display".parse::<LogError>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LogError {
    /// Nothing about the error.
    None,
    /// The name of the error's type (`std::any::type_name`) as the field `error_type`: the
    /// default.
    #[default]
    TypeName,
    /// The type's name and the error's `Debug` text, as the field `error`: everything the error
    /// holds, secrets included. For errors known to hold none.
    Debug,
}

impl std::fmt::Display for LogError {
    /// The name used in the attribute and in config: `none`, `type` or `debug`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LogError::None => "none",
            LogError::TypeName => "type",
            LogError::Debug => "debug",
        })
    }
}

/// The text was not `"none"`, `"type"` or `"debug"`.
///
/// ```
/// let err = "display".parse::<reattempt::LogError>().unwrap_err();
/// assert_eq!(err.to_string(), r#"unknown log_error `display`: expected "none", "type" or "debug""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseLogError(pub String);

impl std::fmt::Display for ParseLogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            r#"unknown log_error `{}`: expected "none", "type" or "debug""#,
            self.0
        )
    }
}

impl std::error::Error for ParseLogError {}

impl std::str::FromStr for LogError {
    type Err = ParseLogError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(LogError::None),
            "type" => Ok(LogError::TypeName),
            "debug" => Ok(LogError::Debug),
            other => Err(ParseLogError(other.to_owned())),
        }
    }
}
