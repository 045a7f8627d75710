//! gRPC service configs (feature `tonic`): `methodConfig` with gRFC A6's `retryPolicy`,
//! `hedgingPolicy` and `timeout`, and `retryThrottling`, validated as A6 says. Public through
//! [`crate::tonic`].
//!
//! The JSON is read by serde (derived raw structs whose leaves never fail), then checked field
//! by field, so that every error names its place in the document
//! (`methodConfig[0].retryPolicy.maxAttempts`). Fields this crate does not use
//! (`loadBalancingConfig`, `waitForReady`, `maxRequestMessageBytes`, …) are ignored, as gRPC
//! ignores what it does not know.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use ::tonic::Code;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::ConfigError;
use crate::guards::retry_throttle::RetryThrottle;

/// A6's default cap on `maxAttempts`, which a client may raise
/// ([`ServiceConfig::with_max_attempts_cap`]).
const DEFAULT_MAX_ATTEMPTS_CAP: u32 = 5;

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
            if let Some(retry) = &mut method.retry {
                retry.cap = cap;
            }
            if let Some(hedging) = &mut method.hedging {
                hedging.cap = cap;
            }
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
            .map(|t| t.check().map_err(|e| e.at("retryThrottling")))
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

/// A6's `retryPolicy`: up to `maxAttempts` attempts (capped at 5 unless the client raises the
/// cap), the `n`-th retry after `min(initialBackoff × backoffMultiplier^(n-1), maxBackoff)`
/// (A6 then applies a jitter of ±20 %), on the `retryableStatusCodes`.
///
/// ```
/// use std::time::Duration;
/// use reattempt::tonic::GrpcRetryPolicy;
/// use tonic::Code;
///
/// let policy = GrpcRetryPolicy::new(
///     4, Duration::from_millis(100), Duration::from_secs(1), 2.0, &[Code::Unavailable],
/// )?;
/// assert_eq!(policy.max_attempts(), 4);
/// assert!(policy.retryable_status_codes().contains(Code::Unavailable));
/// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcRetryPolicy {
    /// As configured.
    max_attempts: u32,
    /// The client's cap.
    cap: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    backoff_multiplier: f64,
    retryable_status_codes: Codes,
}

impl GrpcRetryPolicy {
    /// A retry policy built in code, validated by A6's rules with the errors of a JSON config
    /// (their `field` is the JSON key: `maxAttempts`, …): `max_attempts` at least 2 (above 5 it
    /// counts as 5, as from JSON; see [`with_max_attempts_cap`](Self::with_max_attempts_cap)),
    /// both backoffs greater than 0, `backoff_multiplier` a finite number greater than 0,
    /// `retryable_status_codes` non-empty and without `Ok`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryPolicy, ServiceConfigError};
    /// use tonic::Code;
    ///
    /// let err = GrpcRetryPolicy::new(3, Duration::ZERO, Duration::from_secs(1), 2.0, &[Code::Unavailable])
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "initialBackoff: must be greater than 0");
    /// let err = GrpcRetryPolicy::new(3, Duration::from_secs(1), Duration::from_secs(1), 2.0, &[])
    ///     .unwrap_err();
    /// assert_eq!(err, ServiceConfigError::Invalid { field: "retryableStatusCodes".into(), rule: "must not be empty" });
    /// ```
    ///
    /// # Errors
    ///
    /// [`ServiceConfigError::Invalid`] naming the first value that breaks a rule.
    pub fn new(
        max_attempts: u32,
        initial_backoff: Duration,
        max_backoff: Duration,
        backoff_multiplier: f64,
        retryable_status_codes: &[Code],
    ) -> Result<Self, ServiceConfigError> {
        GrpcRetryPolicy::check(
            i128::from(max_attempts),
            ProtoDuration::positive(initial_backoff),
            ProtoDuration::positive(max_backoff),
            backoff_multiplier,
            Codes::new(retryable_status_codes),
        )
    }

    /// The policy with another cap on `max_attempts` (A6's default is 5), as
    /// [`ServiceConfig::with_max_attempts_cap`] sets it for a whole config.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(9, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.max_attempts(), 5);
    /// assert_eq!(policy.with_max_attempts_cap(10).max_attempts(), 9);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn with_max_attempts_cap(self, cap: u32) -> Self {
        GrpcRetryPolicy { cap, ..self }
    }

    /// The most attempts a call makes, the first included: the configured `maxAttempts`, at
    /// most the cap (5 by default).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.max_attempts(), 2);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.min(self.cap.max(1))
    }

    /// `initialBackoff`: the base of the first retry's delay.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.initial_backoff(), Duration::from_millis(10));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// `maxBackoff`: the ceiling of a delay (before A6's ±20 % jitter).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// assert_eq!(policy.max_backoff(), Duration::from_secs(1));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// `backoffMultiplier`: each delay's growth (A6 allows any value above 0, below 1 too).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::GrpcRetryPolicy;
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 1.5, &[Code::Unavailable])?;
    /// assert_eq!(policy.backoff_multiplier(), 1.5);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn backoff_multiplier(&self) -> f64 {
        self.backoff_multiplier
    }

    /// `retryableStatusCodes`: the codes whose failure is retried.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{Codes, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let codes = [Code::Unavailable, Code::Aborted];
    /// let policy = GrpcRetryPolicy::new(2, Duration::from_millis(10), Duration::from_secs(1), 2.0, &codes)?;
    /// assert_eq!(policy.retryable_status_codes(), Codes::new(&codes));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn retryable_status_codes(&self) -> Codes {
        self.retryable_status_codes
    }

    /// A6's rules, in A6's order; the fields named as in JSON, relative to the policy.
    fn check(
        max_attempts: i128,
        initial_backoff: ProtoDuration,
        max_backoff: ProtoDuration,
        backoff_multiplier: f64,
        retryable_status_codes: Codes,
    ) -> Result<Self, ServiceConfigError> {
        let max_attempts = check_max_attempts(max_attempts)?;
        let initial_backoff = initial_backoff.positive_or("initialBackoff")?;
        let max_backoff = max_backoff.positive_or("maxBackoff")?;
        if !(backoff_multiplier.is_finite() && backoff_multiplier > 0.0) {
            return Err(invalid(
                "backoffMultiplier",
                "must be a finite number greater than 0",
            ));
        }
        if retryable_status_codes.is_empty() {
            return Err(invalid("retryableStatusCodes", "must not be empty"));
        }
        check_no_ok(retryable_status_codes, "retryableStatusCodes")?;
        Ok(GrpcRetryPolicy {
            max_attempts,
            cap: DEFAULT_MAX_ATTEMPTS_CAP,
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            retryable_status_codes,
        })
    }

    fn from_raw(raw: &RawRetryPolicy) -> Result<Self, ServiceConfigError> {
        // Each field read (present, of its type, well formed) in A6's order, then the rules.
        let max_attempts = required(raw.max_attempts.as_ref(), "maxAttempts")?;
        let initial_backoff = required(raw.initial_backoff.as_ref(), "initialBackoff")?;
        let max_backoff = required(raw.max_backoff.as_ref(), "maxBackoff")?;
        let backoff_multiplier = required(raw.backoff_multiplier.as_ref(), "backoffMultiplier")?;
        let codes = required(raw.retryable_status_codes.as_ref(), "retryableStatusCodes")?;
        GrpcRetryPolicy::check(
            max_attempts,
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            codes,
        )
    }
}

/// A6's `hedgingPolicy`: up to `maxAttempts` copies of the call (capped at 5 unless the client
/// raises the cap), one more every `hedgingDelay` until one answers; a `nonFatalStatusCodes`
/// failure sends the next copy at once, any other failure ends the call.
///
/// ```
/// use std::time::Duration;
/// use reattempt::tonic::HedgingPolicy;
/// use tonic::Code;
///
/// let policy = HedgingPolicy::new(4, Duration::from_millis(500), &[Code::Unavailable, Code::Internal])?;
/// assert_eq!((policy.max_attempts(), policy.hedging_delay()), (4, Duration::from_millis(500)));
/// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HedgingPolicy {
    max_attempts: u32,
    cap: u32,
    hedging_delay: Duration,
    non_fatal_status_codes: Codes,
}

impl HedgingPolicy {
    /// A hedging policy built in code, validated by A6's rules with the errors of a JSON config:
    /// `max_attempts` at least 2 (above 5 it counts as 5, as from JSON), `non_fatal_status_codes`
    /// without `Ok` (it may be empty). A zero `hedging_delay` sends every copy at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// let err = HedgingPolicy::new(1, Duration::ZERO, &[]).unwrap_err();
    /// assert_eq!(err.to_string(), "maxAttempts: must be at least 2");
    /// ```
    ///
    /// # Errors
    ///
    /// [`ServiceConfigError::Invalid`] naming the value that breaks a rule.
    pub fn new(
        max_attempts: u32,
        hedging_delay: Duration,
        non_fatal_status_codes: &[Code],
    ) -> Result<Self, ServiceConfigError> {
        HedgingPolicy::check(
            i128::from(max_attempts),
            hedging_delay,
            Codes::new(non_fatal_status_codes),
        )
    }

    /// The policy with another cap on `max_attempts` (A6's default is 5).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// let policy = HedgingPolicy::new(7, Duration::ZERO, &[])?;
    /// assert_eq!(policy.max_attempts(), 5);
    /// assert_eq!(policy.with_max_attempts_cap(7).max_attempts(), 7);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn with_max_attempts_cap(self, cap: u32) -> Self {
        HedgingPolicy { cap, ..self }
    }

    /// The most copies a call sends, the first included: the configured `maxAttempts`, at most
    /// the cap (5 by default).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// assert_eq!(HedgingPolicy::new(3, Duration::ZERO, &[])?.max_attempts(), 3);
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.min(self.cap.max(1))
    }

    /// `hedgingDelay`: the wait before each further copy (0, the default: all at once).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    ///
    /// let policy = HedgingPolicy::new(3, Duration::from_millis(50), &[])?;
    /// assert_eq!(policy.hedging_delay(), Duration::from_millis(50));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn hedging_delay(&self) -> Duration {
        self.hedging_delay
    }

    /// `nonFatalStatusCodes`: failures after which the other copies carry on (empty by default:
    /// any failure ends the call).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::HedgingPolicy;
    /// use tonic::Code;
    ///
    /// let policy = HedgingPolicy::new(3, Duration::ZERO, &[Code::Unavailable])?;
    /// assert!(policy.non_fatal_status_codes().contains(Code::Unavailable));
    /// assert!(!policy.non_fatal_status_codes().contains(Code::Internal));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn non_fatal_status_codes(&self) -> Codes {
        self.non_fatal_status_codes
    }

    fn check(
        max_attempts: i128,
        hedging_delay: Duration,
        non_fatal_status_codes: Codes,
    ) -> Result<Self, ServiceConfigError> {
        let max_attempts = check_max_attempts(max_attempts)?;
        check_no_ok(non_fatal_status_codes, "nonFatalStatusCodes")?;
        Ok(HedgingPolicy {
            max_attempts,
            cap: DEFAULT_MAX_ATTEMPTS_CAP,
            hedging_delay,
            non_fatal_status_codes,
        })
    }

    fn from_raw(raw: &RawHedgingPolicy) -> Result<Self, ServiceConfigError> {
        let max_attempts = required(raw.max_attempts.as_ref(), "maxAttempts")?;
        let hedging_delay = optional(raw.hedging_delay.as_ref(), "hedgingDelay")?
            .map(|d| d.non_negative().map_err(|e| e.at("hedgingDelay")))
            .transpose()?
            .unwrap_or(Duration::ZERO);
        let codes = optional(raw.non_fatal_status_codes.as_ref(), "nonFatalStatusCodes")?
            .unwrap_or_default();
        HedgingPolicy::check(max_attempts, hedging_delay, codes)
    }
}

/// A set of gRPC status codes ([`tonic::Code`](https://docs.rs/tonic/0.14/tonic/enum.Code.html)), as a bit set: `retryableStatusCodes` and
/// `nonFatalStatusCodes`.
///
/// ```
/// use reattempt::tonic::Codes;
/// use tonic::Code;
///
/// let codes = Codes::new(&[Code::Unavailable, Code::Aborted]);
/// assert!(codes.contains(Code::Aborted));
/// assert!(!codes.contains(Code::Internal));
/// assert!(Codes::default().is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Codes(u32);

impl Codes {
    /// The set of `codes`.
    ///
    /// ```
    /// use reattempt::tonic::Codes;
    /// use tonic::Code;
    ///
    /// assert_eq!(Codes::new(&[Code::Unavailable, Code::Unavailable]), Codes::new(&[Code::Unavailable]));
    /// ```
    pub fn new(codes: &[Code]) -> Codes {
        Codes(codes.iter().fold(0, |set, &code| set | bit(code)))
    }

    /// Whether `code` is in the set.
    ///
    /// ```
    /// use reattempt::tonic::Codes;
    /// use tonic::Code;
    ///
    /// assert!(Codes::new(&[Code::Unavailable]).contains(Code::Unavailable));
    /// ```
    pub fn contains(self, code: Code) -> bool {
        self.0 & bit(code) != 0
    }

    /// Whether the set has no code.
    ///
    /// ```
    /// use reattempt::tonic::Codes;
    /// use tonic::Code;
    ///
    /// assert!(Codes::new(&[]).is_empty());
    /// assert!(!Codes::new(&[Code::Ok]).is_empty());
    /// ```
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// `code`'s bit (the 17 codes are 0 to 16).
fn bit(code: Code) -> u32 {
    #[allow(clippy::cast_sign_loss, reason = "a code is 0 to 16")]
    let n = code as i32 as u32;
    1_u32 << (n & 31)
}

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
    fn at(mut self, prefix: &str) -> Self {
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
fn invalid(field: &str, rule: &'static str) -> ServiceConfigError {
    ServiceConfigError::Invalid {
        field: field.to_owned(),
        rule,
    }
}

/// A6: `maxAttempts` is at least 2; a larger one than the cap is clamped when read, not refused.
fn check_max_attempts(n: i128) -> Result<u32, ServiceConfigError> {
    if n < 2 {
        return Err(invalid("maxAttempts", "must be at least 2"));
    }
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// grpc-java (`ServiceConfigUtil`): `OK` is no failure to retry or to hedge on.
fn check_no_ok(codes: Codes, field: &str) -> Result<(), ServiceConfigError> {
    if codes.contains(Code::Ok) {
        return Err(invalid(field, "must not contain OK"));
    }
    Ok(())
}

/// The value of a field that must be present.
fn required<T: Clone>(field: Option<&Field<T>>, name: &str) -> Result<T, ServiceConfigError> {
    optional(field, name)?.ok_or_else(|| ServiceConfigError::Missing {
        field: name.to_owned(),
    })
}

/// The value of a field that may be absent.
fn optional<T: Clone>(
    field: Option<&Field<T>>,
    name: &str,
) -> Result<Option<T>, ServiceConfigError> {
    field
        .map(|f| f.0.clone().map_err(|p| p.at(name)))
        .transpose()
}

// ---- The raw document: derived structs, leaves that record what is wrong instead of failing.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServiceConfig {
    method_config: Option<Vec<RawMethodConfig>>,
    retry_throttling: Option<RawThrottling>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMethodConfig {
    name: Option<Vec<RawName>>,
    retry_policy: Option<RawRetryPolicy>,
    hedging_policy: Option<RawHedgingPolicy>,
    timeout: Option<Field<ProtoDuration>>,
}

#[derive(Deserialize)]
struct RawName {
    service: Option<Field<String>>,
    method: Option<Field<String>>,
}

impl RawName {
    /// The path the name stands for, as grpc-go's `generatePath`: `"/service/method"`,
    /// `"/service/"`, or `""` for the default (no service, or an empty one, and no method).
    fn path(&self) -> Result<String, ServiceConfigError> {
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
struct RawRetryPolicy {
    max_attempts: Option<Field<i128>>,
    initial_backoff: Option<Field<ProtoDuration>>,
    max_backoff: Option<Field<ProtoDuration>>,
    backoff_multiplier: Option<Field<f64>>,
    retryable_status_codes: Option<Field<Codes>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawHedgingPolicy {
    max_attempts: Option<Field<i128>>,
    hedging_delay: Option<Field<ProtoDuration>>,
    non_fatal_status_codes: Option<Field<Codes>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawThrottling {
    max_tokens: Option<Field<i128>>,
    token_ratio: Option<Field<f64>>,
}

impl RawThrottling {
    /// A6's rules for `retryThrottling`, through [`RetryThrottle::new`]'s.
    fn check(&self) -> Result<RetryThrottle, ServiceConfigError> {
        let max_tokens = required(self.max_tokens.as_ref(), "maxTokens")?;
        let token_ratio = required(self.token_ratio.as_ref(), "tokenRatio")?;
        let max_tokens =
            u32::try_from(max_tokens).map_err(|_| invalid("maxTokens", MAX_TOKENS_MESSAGE))?;
        match RetryThrottle::new(max_tokens, token_ratio) {
            Ok(throttle) => Ok(throttle),
            Err(ConfigError::OutOfRange {
                field: "max_tokens",
                ..
            }) => Err(invalid("maxTokens", MAX_TOKENS_MESSAGE)),
            Err(_) => Err(invalid("tokenRatio", TOKEN_RATIO_MESSAGE)),
        }
    }
}

/// `RetryThrottle::new`'s rule for `max_tokens`, after "must be" (a test checks they agree).
const MAX_TOKENS_MESSAGE: &str = "must be in (0, 1000]";
/// `RetryThrottle::new`'s rule for `token_ratio`, after "must be".
const TOKEN_RATIO_MESSAGE: &str = "must be a number of at least 0.001 (A6 keeps 3 decimal places)";

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
struct Field<T>(Result<T, Problem>);

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
                (Ok(set), Ok(Code1(code))) => Ok(Codes(set.0 | bit(code))),
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

/// The codes by their names in the gRPC spec (`statuscodes.md`), as A6 writes them.
const CODE_NAMES: [(&str, Code); 17] = [
    ("OK", Code::Ok),
    ("CANCELLED", Code::Cancelled),
    ("UNKNOWN", Code::Unknown),
    ("INVALID_ARGUMENT", Code::InvalidArgument),
    ("DEADLINE_EXCEEDED", Code::DeadlineExceeded),
    ("NOT_FOUND", Code::NotFound),
    ("ALREADY_EXISTS", Code::AlreadyExists),
    ("PERMISSION_DENIED", Code::PermissionDenied),
    ("RESOURCE_EXHAUSTED", Code::ResourceExhausted),
    ("FAILED_PRECONDITION", Code::FailedPrecondition),
    ("ABORTED", Code::Aborted),
    ("OUT_OF_RANGE", Code::OutOfRange),
    ("UNIMPLEMENTED", Code::Unimplemented),
    ("INTERNAL", Code::Internal),
    ("UNAVAILABLE", Code::Unavailable),
    ("DATA_LOSS", Code::DataLoss),
    ("UNAUTHENTICATED", Code::Unauthenticated),
];

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
struct ProtoDuration {
    negative: bool,
    magnitude: Duration,
}

impl ProtoDuration {
    /// A positive (or zero) duration given in code.
    fn positive(magnitude: Duration) -> Self {
        ProtoDuration {
            negative: false,
            magnitude,
        }
    }

    /// The duration, if greater than 0 (the backoffs).
    fn positive_or(self, field: &str) -> Result<Duration, ServiceConfigError> {
        if self.negative || self.magnitude.is_zero() {
            return Err(invalid(field, "must be greater than 0"));
        }
        Ok(self.magnitude)
    }

    /// The duration, if not negative (`hedgingDelay`, `timeout`); a relative error otherwise.
    fn non_negative(self) -> Result<Duration, ServiceConfigError> {
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
    use crate::guards::retry_throttle::{MAX_TOKENS_RULE, TOKEN_RATIO_RULE};

    #[test]
    fn the_throttles_rules_read_the_same_from_json_and_from_code() {
        assert_eq!(MAX_TOKENS_MESSAGE, format!("must be {MAX_TOKENS_RULE}"));
        assert_eq!(TOKEN_RATIO_MESSAGE, format!("must be {TOKEN_RATIO_RULE}"));
        let from_code = RetryThrottle::new(0, 0.1).unwrap_err().to_string();
        assert_eq!(
            from_code,
            format!("invalid `max_tokens`: {MAX_TOKENS_MESSAGE}")
        );
        let from_code = RetryThrottle::new(1, 0.0).unwrap_err().to_string();
        assert_eq!(
            from_code,
            format!("invalid `token_ratio`: {TOKEN_RATIO_MESSAGE}")
        );
    }

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

    #[test]
    fn codes_hold_every_code_by_its_own_bit() {
        let all = CODE_NAMES.map(|(_, code)| code);
        let set = Codes::new(&all);
        assert_eq!(set.0, (1 << 17) - 1);
        for (i, (name, code)) in CODE_NAMES.iter().enumerate() {
            assert_eq!(*code as usize, i, "{name}");
            assert!(Codes::new(&[*code]).contains(*code));
            assert_eq!(Codes::new(&[*code]).0.count_ones(), 1);
        }
    }

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
