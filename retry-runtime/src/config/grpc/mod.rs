//! gRPC service configs (feature `tonic`): `methodConfig` with gRFC A6's `retryPolicy`,
//! `hedgingPolicy` and `timeout`, and `retryThrottling`, validated as A6 says. Public through
//! [`crate::tonic`].
//!
//! The JSON is read by serde (derived raw structs whose leaves never fail), then checked field
//! by field, so that every error names its place in the document
//! (`methodConfig[0].retryPolicy.maxAttempts`). Fields this crate does not use
//! (`loadBalancingConfig`, `waitForReady`, `maxRequestMessageBytes`, …) are ignored, as gRPC
//! ignores what it does not know.

//! The rooms: this module holds the config and its method entries (name matching, `timeout`);
//! `retry_policy` and `hedging_policy` the two policies, over `attempts` (the `maxAttempts` rule
//! and cap they share); `throttling` the `retryThrottling`; `json` the raw document and its
//! leaves; `codes` the sets of status codes; `error` the errors.

mod attempts;
mod codes;
mod error;
mod hedging_policy;
mod json;
mod retry_policy;
mod throttling;

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::guards::retry_throttle::RetryThrottle;

pub use attempts::DEFAULT_MAX_ATTEMPTS_CAP;
pub use codes::Codes;
#[cfg(all(feature = "spans", feature = "tonic"))]
pub(crate) use codes::code_name;
pub use error::ServiceConfigError;
pub use hedging_policy::HedgingPolicy;
pub use retry_policy::GrpcRetryPolicy;

use json::{ProtoDuration, RawMethodConfig, RawServiceConfig, optional};
/// A gRPC service config: its method configs (by gRPC's name matching) and its
/// `retryThrottling`, validated by [gRFC A6](https://github.com/grpc/proposal/blob/master/A6-client-retries.md)'s
/// rules. Read with [`from_json`](Self::from_json) (typed errors) or through serde (any format;
/// the same errors as the deserializer's messages).
///
/// ```
/// use std::time::Duration;
/// use reattempt::tonic::ServiceConfig;
/// use tonic::Code;
///
/// let config = ServiceConfig::from_json(r#"{
///     "loadBalancingConfig": [{ "round_robin": {} }],
///     "methodConfig": [{
///         "name": [{ "service": "helloworld.Greeter" }],
///         "timeout": "2s",
///         "retryPolicy": {
///             "maxAttempts": 4,
///             "initialBackoff": "0.1s",
///             "maxBackoff": "1s",
///             "backoffMultiplier": 2,
///             "retryableStatusCodes": ["UNAVAILABLE"]
///         }
///     }],
///     "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
/// }"#)?;
/// let method = config.method_config("/helloworld.Greeter/SayHello").unwrap();
/// assert_eq!(method.timeout(), Some(Duration::from_secs(2)));
/// let retry = method.retry_policy().unwrap();
/// assert_eq!(retry.max_attempts(), 4);
/// assert!(retry.retryable_status_codes().contains(Code::Unavailable));
/// assert!(config.method_config("/other.Service/Method").is_none());
/// assert_eq!(config.retry_throttling().unwrap().tokens(), 10.0);
///
/// // serde, too: the same rules, the same messages.
/// let config: ServiceConfig = serde_json::from_str("{}")?;
/// assert!(config.retry_throttling().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    methods: Vec<MethodConfig>,
    /// A name's path (`"/svc/method"`, `"/svc/"`, `""` for the default) → its entry in `methods`.
    names: HashMap<String, usize>,
    /// The configured throttle, never counted on: each channel gets a fresh copy.
    throttling: Option<RetryThrottle>,
}

impl ServiceConfig {
    /// Reads and validates a service config in gRPC's JSON form.
    ///
    /// ```
    /// use reattempt::tonic::{ServiceConfig, ServiceConfigError};
    ///
    /// let err = ServiceConfig::from_json(r#"{"methodConfig": [{
    ///     "name": [{"service": "foo"}],
    ///     "retryPolicy": { "maxAttempts": 1, "initialBackoff": "1s", "maxBackoff": "2s",
    ///                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] }
    /// }]}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "methodConfig[0].retryPolicy.maxAttempts: must be at least 2");
    /// assert_eq!(err.field(), "methodConfig[0].retryPolicy.maxAttempts");
    ///
    /// let err = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{}], "timeout": "3c"}]}"#)
    ///     .unwrap_err();
    /// assert!(matches!(err, ServiceConfigError::Duration { .. }), "{err}");
    /// ```
    ///
    /// # Errors
    ///
    /// [`ServiceConfigError`]: not JSON, or not a service config's shape; a field that breaks
    /// one of A6's rules; a duplicated name.
    pub fn from_json(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        let raw: RawServiceConfig =
            serde_json::from_str(json).map_err(|e| ServiceConfigError::Json {
                message: e.to_string(),
            })?;
        ServiceConfig::from_raw(raw)
    }

    /// The method config for a request path `"/package.Service/Method"`, by gRPC's name
    /// matching: an entry naming the service and the method wins over one naming only the
    /// service, which wins over the default entry (a name `{}`, or an empty service). `None` when
    /// none applies.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let config = ServiceConfig::from_json(r#"{"methodConfig": [
    ///     { "name": [{}], "timeout": "1s" },
    ///     { "name": [{ "service": "foo" }], "timeout": "2s" },
    ///     { "name": [{ "service": "foo", "method": "Bar" }], "timeout": "3s" }
    /// ]}"#)?;
    /// let timeout = |path| config.method_config(path).and_then(|m| m.timeout());
    /// assert_eq!(timeout("/foo/Bar"), Some(Duration::from_secs(3)));
    /// assert_eq!(timeout("/foo/Baz"), Some(Duration::from_secs(2)));
    /// assert_eq!(timeout("/other/Bar"), Some(Duration::from_secs(1)));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn method_config(&self, path: &str) -> Option<&MethodConfig> {
        let find = |key: &str| self.names.get(key).map(|&i| &self.methods[i]);
        find(path)
            .or_else(|| path.rfind('/').and_then(|i| find(&path[..=i])))
            .or_else(|| find(""))
    }

    /// A fresh throttle with the configured `retryThrottling` (full), or `None` when the config
    /// has none. Make one per channel and share it (clones share its tokens).
    ///
    /// ```
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let config = ServiceConfig::from_json(
    ///     r#"{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#,
    /// )?;
    /// let throttle = config.retry_throttling().unwrap();
    /// assert_eq!((throttle.max_tokens(), throttle.token_ratio()), (10, 0.1));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn retry_throttling(&self) -> Option<RetryThrottle> {
        self.throttling.as_ref().map(RetryThrottle::fresh)
    }

    /// A6 caps `maxAttempts` (of retry and hedging policies) at 5: larger values are clamped,
    /// not refused, so that a config from DNS cannot make a client send many copies. The client
    /// may choose another cap; the policies' `max_attempts()` are then the smaller of their
    /// configured value and `cap` (at least 1).
    ///
    /// ```
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let json = r#"{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 8}}]}"#;
    /// let config = ServiceConfig::from_json(json)?;
    /// let attempts = |c: &ServiceConfig| c.method_config("/a/b").unwrap().hedging_policy().unwrap().max_attempts();
    /// assert_eq!(attempts(&config), 5);
    /// assert_eq!(attempts(&config.clone().with_max_attempts_cap(10)), 8);
    /// assert_eq!(attempts(&config.with_max_attempts_cap(3)), 3);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn with_max_attempts_cap(mut self, cap: u32) -> ServiceConfig {
        for method in &mut self.methods {
            method.retry = method.retry.take().map(|r| r.with_max_attempts_cap(cap));
            method.hedging = method.hedging.take().map(|h| h.with_max_attempts_cap(cap));
        }
        self
    }

    fn from_raw(raw: RawServiceConfig) -> Result<ServiceConfig, ServiceConfigError> {
        let mut methods = Vec::new();
        let mut names = HashMap::new();
        for (i, entry) in raw
            .method_config
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let at = format!("methodConfig[{i}]");
            let method = MethodConfig::from_raw(&entry).map_err(|e| e.at(&at))?;
            // Validated even without a name (as grpc-java does), though such an entry applies to
            // no method (grpc-go skips it).
            let Some(entry_names) = entry.name else {
                continue;
            };
            for (j, name) in entry_names.iter().enumerate() {
                let field = format!("{at}.name[{j}]");
                let path = name.path().map_err(|e| e.at(&field))?;
                if names.contains_key(&path) {
                    return Err(ServiceConfigError::DuplicateName { field, name: path });
                }
                names.insert(path, methods.len());
            }
            methods.push(method);
        }
        let throttling = raw
            .retry_throttling
            .map(|t| throttling::check(&t).map_err(|e| e.at("retryThrottling")))
            .transpose()?;
        Ok(ServiceConfig {
            methods,
            names,
            throttling,
        })
    }
}

/// Read from gRPC's JSON form (or the same shape in any serde format), checked as
/// [`ServiceConfig::from_json`] checks it; an error is the deserializer's, with the
/// [`ServiceConfigError`]'s message.
///
/// ```
/// use reattempt::tonic::ServiceConfig;
///
/// let err = serde_json::from_str::<ServiceConfig>(
///     r#"{"retryThrottling": {"maxTokens": 0, "tokenRatio": 0.1}}"#,
/// ).unwrap_err();
/// assert!(err.to_string().starts_with("retryThrottling.maxTokens: must be in (0, 1000]"), "{err}");
/// ```
impl<'de> Deserialize<'de> for ServiceConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawServiceConfig::deserialize(deserializer)?;
        ServiceConfig::from_raw(raw).map_err(de::Error::custom)
    }
}

/// One `methodConfig` entry: its retry or hedging policy (at most one of them) and its
/// `timeout`. Found by [`ServiceConfig::method_config`].
///
/// ```
/// use reattempt::tonic::ServiceConfig;
///
/// let config = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{"service": "s"}]}]}"#)?;
/// let method = config.method_config("/s/m").unwrap();
/// assert!(method.retry_policy().is_none() && method.hedging_policy().is_none());
/// assert_eq!(method.timeout(), None);
/// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MethodConfig {
    retry: Option<GrpcRetryPolicy>,
    hedging: Option<HedgingPolicy>,
    timeout: Option<Duration>,
}

impl MethodConfig {
    /// The `retryPolicy`, if the entry has one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let config = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{}], "retryPolicy": {
    ///     "maxAttempts": 3, "initialBackoff": "0.2s", "maxBackoff": "5s",
    ///     "backoffMultiplier": 1.5, "retryableStatusCodes": [14, "resource_exhausted"]}}]}"#)?;
    /// let retry = config.method_config("/a/b").unwrap().retry_policy().unwrap();
    /// assert_eq!(retry.initial_backoff(), Duration::from_millis(200));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn retry_policy(&self) -> Option<&GrpcRetryPolicy> {
        self.retry.as_ref()
    }

    /// The `hedgingPolicy`, if the entry has one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let config = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{}],
    ///     "hedgingPolicy": {"maxAttempts": 4, "hedgingDelay": "0.5s"}}]}"#)?;
    /// let hedging = config.method_config("/a/b").unwrap().hedging_policy().unwrap();
    /// assert_eq!(hedging.hedging_delay(), Duration::from_millis(500));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn hedging_policy(&self) -> Option<&HedgingPolicy> {
        self.hedging.as_ref()
    }

    /// The `timeout`: the deadline of the whole call, all attempts included (A6), if given.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::ServiceConfig;
    ///
    /// let config = ServiceConfig::from_json(
    ///     r#"{"methodConfig": [{"name": [{}], "timeout": "1.000340012s"}]}"#,
    /// )?;
    /// let timeout = config.method_config("/a/b").unwrap().timeout();
    /// assert_eq!(timeout, Some(Duration::new(1, 340_012)));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn from_raw(raw: &RawMethodConfig) -> Result<MethodConfig, ServiceConfigError> {
        let timeout = optional(raw.timeout.as_ref(), "timeout")?
            .map(|d: ProtoDuration| d.non_negative().map_err(|e| e.at("timeout")))
            .transpose()?;
        let retry = raw
            .retry_policy
            .as_ref()
            .map(|r| GrpcRetryPolicy::from_raw(r).map_err(|e| e.at("retryPolicy")))
            .transpose()?;
        let hedging = raw
            .hedging_policy
            .as_ref()
            .map(|h| HedgingPolicy::from_raw(h).map_err(|e| e.at("hedgingPolicy")))
            .transpose()?;
        if retry.is_some() && hedging.is_some() {
            return Err(ServiceConfigError::RetryAndHedging {
                field: String::new(),
            });
        }
        Ok(MethodConfig {
            retry,
            hedging,
            timeout,
        })
    }
}
