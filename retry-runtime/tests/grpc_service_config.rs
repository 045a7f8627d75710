//! gRPC service configs (`retry_runtime::tonic::ServiceConfig`): gRFC A6's own examples, the
//! parsing cases of grpc-go and grpc-java ported one by one (each cites its source file and
//! test), gRPC's name matching, and the typed errors, each naming its field's path.
#![cfg(feature = "tonic")]
#![allow(
    clippy::float_cmp,
    reason = "tokens are thousandths over 1000: exactly the nearest f64 to the decimal written"
)]

use std::time::Duration;

use retry_runtime::tonic::{
    Codes, GrpcRetryPolicy, HedgingPolicy, ServiceConfig, ServiceConfigError,
};
use tonic::Code;

fn parse(json: &str) -> ServiceConfig {
    ServiceConfig::from_json(json).unwrap_or_else(|e| panic!("{e}\n{json}"))
}

fn error(json: &str) -> ServiceConfigError {
    match ServiceConfig::from_json(json) {
        Ok(config) => panic!("accepted: {config:?}\n{json}"),
        Err(e) => e,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A service config with one method config for `{"service": "foo"}` whose body is `body`.
fn foo_with(body: &str) -> String {
    format!(r#"{{"methodConfig": [{{"name": [{{"service": "foo"}}], {body}}}]}}"#)
}

// ---- gRFC A6's examples (github.com/grpc/proposal, A6-client-retries.md) ----------------------

/// A6, "Retry Policy" and "Throttling Configuration": the spec's `retryPolicy` and
/// `retryThrottling` examples, in "Integration with Service Config"'s layout.
#[test]
fn a6_retry_policy_and_throttling_example() {
    let config = parse(
        r#"{
        "loadBalancingPolicy": "round_robin",
        "methodConfig": [{
            "name": [{ "service": "EchoService", "method": "Echo" }],
            "retryPolicy": {
                "maxAttempts": 4,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": [
                    "UNAVAILABLE"
                ]
            }
        }],
        "retryThrottling": {
            "maxTokens": 10,
            "tokenRatio": 0.1
        }
    }"#,
    );
    let method = config.method_config("/EchoService/Echo").unwrap();
    assert_eq!(
        method.retry_policy().unwrap(),
        &GrpcRetryPolicy::new(4, ms(100), ms(1000), 2.0, &[Code::Unavailable]).unwrap()
    );
    assert!(method.hedging_policy().is_none());
    assert!(config.method_config("/EchoService/Other").is_none());
    let throttle = config.retry_throttling().unwrap();
    assert_eq!(
        (
            throttle.max_tokens(),
            throttle.token_ratio(),
            throttle.tokens()
        ),
        (10, 0.1, 10.0)
    );
}

/// A6, "Hedging Policy": both examples (every 500 ms; all four at once).
#[test]
fn a6_hedging_policy_examples() {
    for (delay, want) in [("0.5s", ms(500)), ("0s", Duration::ZERO)] {
        let config = parse(&format!(
            r#"{{"methodConfig": [{{
                "name": [{{ "service": "EchoService" }}],
                "hedgingPolicy": {{
                    "maxAttempts": 4,
                    "hedgingDelay": "{delay}",
                    "nonFatalStatusCodes": [
                        "UNAVAILABLE",
                        "INTERNAL",
                        "ABORTED"
                    ]
                }}
            }}]}}"#
        ));
        let hedging = config
            .method_config("/EchoService/Echo")
            .unwrap()
            .hedging_policy()
            .unwrap();
        assert_eq!(
            hedging,
            &HedgingPolicy::new(4, want, &[Code::Unavailable, Code::Internal, Code::Aborted])
                .unwrap()
        );
    }
}

/// A6, "Validation of retryPolicy" 1: values above 5 are treated as 5, without an error; the
/// client may change the cap ("Limits on Retries and Hedges").
#[test]
fn a6_max_attempts_above_five_is_clamped_not_refused() {
    let config = parse(&foo_with(
        r#""retryPolicy": {"maxAttempts": 9, "initialBackoff": "1s", "maxBackoff": "1s",
            "backoffMultiplier": 1, "retryableStatusCodes": [14]}"#,
    ));
    let attempts = |c: &ServiceConfig| {
        c.method_config("/foo/x")
            .unwrap()
            .retry_policy()
            .unwrap()
            .max_attempts()
    };
    assert_eq!(attempts(&config), 5);
    assert_eq!(attempts(&config.clone().with_max_attempts_cap(7)), 7);
    assert_eq!(attempts(&config.clone().with_max_attempts_cap(100)), 9);
    assert_eq!(attempts(&config.with_max_attempts_cap(0)), 1);
    // Huge values too: clamped, not an overflow.
    let config = parse(&foo_with(r#""hedgingPolicy": {"maxAttempts": 1e30}"#));
    let hedging = config
        .method_config("/foo/x")
        .unwrap()
        .hedging_policy()
        .unwrap();
    assert_eq!(hedging.max_attempts(), 5);
}

/// A6, "Validation of retryPolicy" 4: codes in integer form or case-insensitive string form
/// (`[14]`, `["UNAVAILABLE"]`, `["unavailable"]`).
#[test]
fn a6_status_codes_by_number_or_any_case_name() {
    for codes in [
        r"[14]",
        r#"["UNAVAILABLE"]"#,
        r#"["unavailable"]"#,
        r#"["Unavailable"]"#,
        "[14.0]",
    ] {
        let config = parse(&foo_with(&format!(
            r#""hedgingPolicy": {{"maxAttempts": 2, "nonFatalStatusCodes": {codes}}}"#
        )));
        let hedging = config
            .method_config("/foo/x")
            .unwrap()
            .hedging_policy()
            .unwrap();
        assert_eq!(
            hedging.non_fatal_status_codes(),
            Codes::new(&[Code::Unavailable]),
            "{codes}"
        );
    }
    let all = (1..=16)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let config = parse(&foo_with(&format!(
        r#""hedgingPolicy": {{"maxAttempts": 2, "nonFatalStatusCodes": [{all}]}}"#
    )));
    let codes = config
        .method_config("/foo/x")
        .unwrap()
        .hedging_policy()
        .unwrap()
        .non_fatal_status_codes();
    for code in 1..=16 {
        assert!(codes.contains(Code::from_i32(code)), "{code}");
    }
    assert!(!codes.contains(Code::Ok));
}

/// A6: "Only one of retryPolicy or hedgingPolicy may be set."
#[test]
fn a6_retry_and_hedging_exclude_each_other() {
    let err = error(&foo_with(
        r#""retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
            "backoffMultiplier": 1, "retryableStatusCodes": [14]},
           "hedgingPolicy": {"maxAttempts": 2}"#,
    ));
    assert_eq!(
        err,
        ServiceConfigError::RetryAndHedging {
            field: "methodConfig[0]".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "methodConfig[0]: has both retryPolicy and hedgingPolicy (A6 allows one)"
    );
}

/// A6, "Validation of hedgingPolicy": `hedgingDelay` and `nonFatalStatusCodes` are optional.
#[test]
fn a6_hedging_defaults() {
    let config = parse(&foo_with(r#""hedgingPolicy": {"maxAttempts": 3}"#));
    let hedging = config
        .method_config("/foo/x")
        .unwrap()
        .hedging_policy()
        .unwrap();
    assert_eq!(hedging.hedging_delay(), Duration::ZERO);
    assert!(hedging.non_fatal_status_codes().is_empty());
    let err = error(&foo_with(r#""hedgingPolicy": {"hedgingDelay": "1s"}"#));
    assert_eq!(
        err.to_string(),
        "methodConfig[0].hedgingPolicy.maxAttempts: is required"
    );
}

/// A6, "Validation of retryThrottling": maxTokens in (0, 1000], tokenRatio > 0, decimals beyond
/// the third ignored (0.5466 is 0.546).
#[test]
fn a6_retry_throttling_validation() {
    let throttle =
        |json: &str| ServiceConfig::from_json(&format!(r#"{{"retryThrottling": {json}}}"#));
    let t = throttle(r#"{"maxTokens": 1000, "tokenRatio": 0.5466}"#)
        .unwrap()
        .retry_throttling()
        .unwrap();
    assert_eq!((t.max_tokens(), t.token_ratio()), (1000, 0.546));
    for (json, field, message) in [
        (
            r#"{"maxTokens": 0, "tokenRatio": 0.1}"#,
            "retryThrottling.maxTokens",
            "must be in (0, 1000]",
        ),
        (
            r#"{"maxTokens": 1001, "tokenRatio": 0.1}"#,
            "retryThrottling.maxTokens",
            "must be in (0, 1000]",
        ),
        (
            r#"{"maxTokens": -3, "tokenRatio": 0.1}"#,
            "retryThrottling.maxTokens",
            "must be in (0, 1000]",
        ),
        (
            r#"{"maxTokens": 10, "tokenRatio": 0}"#,
            "retryThrottling.tokenRatio",
            "must be a number of at least 0.001 (A6 keeps 3 decimal places)",
        ),
        (
            r#"{"maxTokens": 10, "tokenRatio": -0.1}"#,
            "retryThrottling.tokenRatio",
            "must be a number of at least 0.001 (A6 keeps 3 decimal places)",
        ),
        (
            r#"{"maxTokens": 10, "tokenRatio": 0.0009}"#,
            "retryThrottling.tokenRatio",
            "must be a number of at least 0.001 (A6 keeps 3 decimal places)",
        ),
        (
            r#"{"tokenRatio": 0.1}"#,
            "retryThrottling.maxTokens",
            "is required",
        ),
        (
            r#"{"maxTokens": 10}"#,
            "retryThrottling.tokenRatio",
            "is required",
        ),
        (
            r#"{"maxTokens": 10.5, "tokenRatio": 0.1}"#,
            "retryThrottling.maxTokens",
            "must be a whole number",
        ),
        (
            r#"{"maxTokens": "10", "tokenRatio": 0.1}"#,
            "retryThrottling.maxTokens",
            "must be a whole number",
        ),
    ] {
        let err = throttle(json).unwrap_err();
        assert_eq!(err.field(), field, "{json}");
        assert_eq!(err.to_string(), format!("{field}: {message}"), "{json}");
    }
    assert!(
        ServiceConfig::from_json("{}")
            .unwrap()
            .retry_throttling()
            .is_none()
    );
}

// ---- grpc-go: service_config_test.go ----------------------------------------------------------

/// grpc-go `service_config_test.go`, `TestParseTimeOut`: `"1s"`; `"3c"` refused; a valid entry
/// after a refused one does not rescue it.
#[test]
fn grpc_go_test_parse_time_out() {
    let config = parse(
        r#"{"methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "timeout": "1s"}]}"#,
    );
    assert_eq!(
        config.method_config("/foo/Bar").unwrap().timeout(),
        Some(Duration::from_secs(1))
    );
    let err = error(
        r#"{"methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "timeout": "3c"}]}"#,
    );
    assert!(
        matches!(&err, ServiceConfigError::Duration { field, value, .. }
            if field == "methodConfig[0].timeout" && value == "3c"),
        "{err}"
    );
    let err = error(
        r#"{"methodConfig": [
            {"name": [{"service": "foo", "method": "Bar"}], "timeout": "3c"},
            {"name": [{"service": "foo", "method": "Bar"}], "timeout": "1s"}
        ]}"#,
    );
    assert_eq!(err.field(), "methodConfig[0].timeout");
}

/// grpc-go `service_config_test.go`, `TestParseDefaultMethodConfig`: `[{}]`,
/// `[{"service": null}]` and `[{"service": ""}]` name the default; a method without a service
/// (`[{"method": "Bar"}]`, `[{"service": "", "method": "Bar"}]`) is an error.
#[test]
fn grpc_go_test_parse_default_method_config() {
    for name in [r"{}", r#"{"service": null}"#, r#"{"service": ""}"#] {
        let config = parse(&format!(
            r#"{{"methodConfig": [{{"name": [{name}], "waitForReady": true, "timeout": "2s"}}]}}"#
        ));
        assert_eq!(
            config.method_config("/any.Service/Any").unwrap().timeout(),
            Some(Duration::from_secs(2)),
            "{name}"
        );
    }
    for name in [
        r#"{"method": "Bar"}"#,
        r#"{"service": "", "method": "Bar"}"#,
    ] {
        let err = error(&format!(
            r#"{{"methodConfig": [{{"name": [{name}], "waitForReady": true}}]}}"#
        ));
        assert_eq!(
            err,
            ServiceConfigError::MethodWithoutService {
                field: "methodConfig[0].name[0]".into()
            },
            "{name}"
        );
        assert_eq!(
            err.to_string(),
            "methodConfig[0].name[0]: has a method but no service"
        );
    }
}

/// grpc-go `service_config_test.go`, `TestParseMethodConfigDuplicatedName`: one entry naming
/// `{"service": "foo"}` twice.
#[test]
fn grpc_go_test_parse_method_config_duplicated_name() {
    let err = error(
        r#"{"methodConfig": [{"name": [{"service": "foo"}, {"service": "foo"}], "waitForReady": true}]}"#,
    );
    assert_eq!(
        err,
        ServiceConfigError::DuplicateName {
            field: "methodConfig[0].name[1]".into(),
            name: "/foo/".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "methodConfig[0].name[1]: names /foo/ again (an earlier entry names it)"
    );
}

/// grpc-go `service_config_test.go`, `TestParseRetryPolicy`: "valid", then "negative
/// maxAttempts", "missing maxAttempts", "zero initialBackoff", "zero maxBackoff", "zero
/// backoffMultiplier", "no retryable codes" (grpc-go only says that they fail; here each names
/// its field).
#[test]
fn grpc_go_test_parse_retry_policy() {
    let policy = |fields: &str| foo_with(&format!(r#""retryPolicy": {{{fields}}}"#));
    // "valid"
    let config = parse(&policy(
        r#""maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "10s",
           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
    ));
    assert_eq!(
        config
            .method_config("/foo/")
            .unwrap()
            .retry_policy()
            .unwrap(),
        &GrpcRetryPolicy::new(2, ms(2000), ms(10_000), 2.0, &[Code::Unavailable]).unwrap()
    );
    let at = "methodConfig[0].retryPolicy";
    for (name, fields, want) in [
        (
            "negative maxAttempts",
            r#""maxAttempts": -1, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            format!("{at}.maxAttempts: must be at least 2"),
        ),
        (
            "missing maxAttempts",
            r#""initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            format!("{at}.maxAttempts: is required"),
        ),
        (
            "zero initialBackoff",
            r#""maxAttempts": 2, "initialBackoff": "0s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            format!("{at}.initialBackoff: must be greater than 0"),
        ),
        (
            "zero maxBackoff",
            r#""maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "0s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            format!("{at}.maxBackoff: must be greater than 0"),
        ),
        (
            "zero backoffMultiplier",
            r#""maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 0, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            format!("{at}.backoffMultiplier: must be a finite number greater than 0"),
        ),
        (
            "no retryable codes",
            r#""maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": []"#,
            format!("{at}.retryableStatusCodes: must not be empty"),
        ),
    ] {
        assert_eq!(error(&policy(fields)).to_string(), want, "{name}");
    }
}

// ---- grpc-go: internal/serviceconfig/duration_test.go ------------------------------------------

/// grpc-go `internal/serviceconfig/duration_test.go`, `TestDuration_MarshalUnmarshal`: the
/// accepted forms and the parse errors. Durations here are never negative, so the negative
/// cases are read (they parse) and then refused as a `timeout`; Go's saturation at
/// `math.MaxInt64` nanoseconds does not apply (a `std::time::Duration` holds 10,000 years).
#[test]
fn grpc_go_test_duration_marshal_unmarshal() {
    let timeout = |d: &str| {
        ServiceConfig::from_json(&format!(
            r#"{{"methodConfig": [{{"name": [{{}}], "timeout": {d}}}]}}"#
        ))
        .map(|c| c.method_config("/a/b").unwrap().timeout().unwrap())
    };
    // Basic values.
    assert_eq!(timeout(r#""1s""#), Ok(Duration::from_secs(1)));
    assert_eq!(timeout(r#"".050s""#), Ok(ms(50)));
    for negative in [r#""-100.700s""#, r#""-.001s""#, r#""-0.200s""#] {
        assert_eq!(
            timeout(negative).unwrap_err().to_string(),
            "methodConfig[0].timeout: must not be negative",
            "{negative}"
        );
    }
    // Positive near / out of bounds.
    assert_eq!(
        timeout(r#""9223372036s""#),
        Ok(Duration::from_secs(9_223_372_036))
    );
    assert_eq!(
        timeout(r#""9223372037s""#),
        Ok(Duration::from_secs(9_223_372_037))
    );
    assert_eq!(
        timeout(r#""9223372036.854775807s""#),
        Ok(Duration::new(9_223_372_036, 854_775_807))
    );
    assert_eq!(
        timeout(r#""315576000000s""#),
        Ok(Duration::from_secs(315_576_000_000))
    );
    let err = timeout(r#""315576000001s""#).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    let err = timeout(r#""-315576000001s""#).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    // Parse errors.
    assert!(matches!(
        timeout("123s"),
        Err(ServiceConfigError::Json { .. })
    ));
    for malformed in ["5m", "5.3.2s", "x.3s", "3.xs", "3.1234567890s", ".s", "s"] {
        let err = timeout(&format!("{malformed:?}")).unwrap_err();
        assert!(
            matches!(&err, ServiceConfigError::Duration { field, value, .. }
                if field == "methodConfig[0].timeout" && value == malformed),
            "{malformed}: {err}"
        );
    }
}

/// The brief's example of nine fractional digits, and forms protobuf's JSON does not have.
#[test]
fn proto_json_durations() {
    let backoff = |d: &str| {
        ServiceConfig::from_json(&foo_with(&format!(
            r#""retryPolicy": {{"maxAttempts": 2, "initialBackoff": {d}, "maxBackoff": "1s",
                "backoffMultiplier": 2, "retryableStatusCodes": [14]}}"#
        )))
        .map(|c| {
            c.method_config("/foo/x")
                .unwrap()
                .retry_policy()
                .unwrap()
                .initial_backoff()
        })
    };
    assert_eq!(backoff(r#""1.000340012s""#), Ok(Duration::new(1, 340_012)));
    assert_eq!(backoff(r#""0.1s""#), Ok(ms(100)));
    assert_eq!(
        backoff(r#""5.s""#),
        Ok(Duration::from_secs(5)),
        "as grpc-go"
    );
    for (bad, problem) in [
        (
            "100ms",
            r#"must be a decimal number of seconds ending in `s`, as "0.1s""#,
        ),
        ("1m", r#"must be seconds ending in `s`, as "0.1s""#),
        ("1", r#"must be seconds ending in `s`, as "0.1s""#),
        (
            "+1s",
            r#"must be a decimal number of seconds ending in `s`, as "0.1s""#,
        ),
        (
            " 1s",
            r#"must be a decimal number of seconds ending in `s`, as "0.1s""#,
        ),
        (
            "1e3s",
            r#"must be a decimal number of seconds ending in `s`, as "0.1s""#,
        ),
        ("1.0000000001s", "has more than 9 fractional digits"),
        ("-s", "has no digits"),
        (
            "99999999999999999999s",
            "is out of range (at most 315576000000s)",
        ),
    ] {
        let err = backoff(&format!("{bad:?}")).unwrap_err();
        assert_eq!(
            err,
            ServiceConfigError::Duration {
                field: "methodConfig[0].retryPolicy.initialBackoff".into(),
                value: bad.into(),
                problem,
            },
            "{bad}"
        );
    }
    let err = backoff("0.1").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"methodConfig[0].retryPolicy.initialBackoff: must be a duration string such as "0.1s""#
    );
    let err = backoff(r#""-1s""#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "methodConfig[0].retryPolicy.initialBackoff: must be greater than 0"
    );
}

// ---- grpc-java: ManagedChannelServiceConfigTest, RetryPolicyTest, HedgingPolicyTest -----------

/// grpc-java `ManagedChannelServiceConfigTest`, `createManagedChannelServiceConfig_failsOnDuplicateMethod`,
/// `_failsOnDuplicateService`, `_failsOnDuplicateServiceMultipleConfig`.
#[test]
fn grpc_java_fails_on_duplicate_names() {
    let err = error(
        r#"{"methodConfig": [{"name": [{"service": "service", "method": "method"}, {"service": "service", "method": "method"}]}]}"#,
    );
    assert_eq!(
        err,
        ServiceConfigError::DuplicateName {
            field: "methodConfig[0].name[1]".into(),
            name: "/service/method".into()
        }
    );
    let err =
        error(r#"{"methodConfig": [{"name": [{"service": "service"}, {"service": "service"}]}]}"#);
    assert_eq!(err.field(), "methodConfig[0].name[1]");
    let err = error(
        r#"{"methodConfig": [{"name": [{"service": "service"}]}, {"name": [{"service": "service"}]}]}"#,
    );
    assert_eq!(
        err,
        ServiceConfigError::DuplicateName {
            field: "methodConfig[1].name[0]".into(),
            name: "/service/".into()
        }
    );
    // And two defaults (grpc-java: "Duplicate default method config").
    let err = error(r#"{"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]}"#);
    assert_eq!(
        err.to_string(),
        "methodConfig[1].name[0]: a second default method config"
    );
}

/// grpc-java `ManagedChannelServiceConfigTest`, `createManagedChannelServiceConfig_failsOnMethodNameWithEmptyServiceName`,
/// `_failsOnMethodNameWithoutServiceName`, `_failsOnMissingServiceName`.
#[test]
fn grpc_java_fails_on_method_without_service() {
    for name in [
        r#"{"service": "", "method": "method1"}"#,
        r#"{"method": "method1"}"#,
        r#"{"method": "method"}"#,
    ] {
        let err = error(&format!(r#"{{"methodConfig": [{{"name": [{name}]}}]}}"#));
        assert!(
            matches!(err, ServiceConfigError::MethodWithoutService { .. }),
            "{name}: {err}"
        );
    }
}

/// grpc-java `ManagedChannelServiceConfigTest`, `managedChannelServiceConfig_parseMethodConfig`
/// (retry enabled, `maxRetryAttemptsLimit` 2): timeouts by name matching; `maxAttempts` 3.0 (a
/// JSON float) capped at 2; `perAttemptRecvTimeout` (not in A6) ignored.
#[test]
fn grpc_java_parse_method_config() {
    let config = parse(
        r#"{"methodConfig": [
        {
            "name": [{"service": "service1", "method": "method1"}, {"service": "service2"}],
            "timeout": "1.234s",
            "retryPolicy": {
                "maxAttempts": 3.0, "initialBackoff": "1s", "maxBackoff": "10s",
                "backoffMultiplier": 1.5, "perAttemptRecvTimeout": "2.5s",
                "retryableStatusCodes": ["UNAVAILABLE"]
            }
        },
        { "name": [{}], "timeout": "4.321s" }
    ]}"#,
    )
    .with_max_attempts_cap(2);
    let method = config.method_config("/service1/method1").unwrap();
    assert_eq!(method.timeout(), Some(ms(1234)));
    let retry = method.retry_policy().unwrap();
    assert_eq!(retry.max_attempts(), 2);
    assert_eq!(
        retry.retryable_status_codes(),
        Codes::new(&[Code::Unavailable])
    );
    let method = config.method_config("/service1/methodX").unwrap();
    assert_eq!(method.timeout(), Some(ms(4321)));
    assert!(method.retry_policy().is_none());
    let method = config.method_config("/service2/methodX").unwrap();
    assert_eq!(method.timeout(), Some(ms(1234)));
}

/// grpc-java's `test_retry_service_config.json` (core/src/test/resources/io/grpc/internal).
const JAVA_RETRY_CONFIG: &str = r#"{
  "loadBalancingPolicy":"round_robin",
  "methodConfig":[
    {
      "name":[{"service":"SimpleService1"}],
      "waitForReady":false,
      "retryPolicy":{
        "maxAttempts":3, "initialBackoff":"2.1s", "maxBackoff":"2.2s", "backoffMultiplier":3,
        "retryableStatusCodes":["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
      }
    },
    {
      "name":[{"service":"SimpleService2"}],
      "waitForReady":false
    },
    {
      "name":[{"service":"SimpleService1", "method":"Foo1"}, {"service":"SimpleService2", "method":"Foo2"}],
      "waitForReady":true,
      "retryPolicy":{
        "maxAttempts":5, "initialBackoff":"0.1s", "maxBackoff":"1s", "backoffMultiplier":2,
        "retryableStatusCodes":["UNAVAILABLE"]
      }
    }
  ],
  "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
}"#;

/// grpc-java `RetryPolicyTest`, `getRetryPolicies` (`maxRetryAttemptsLimit` 4).
#[test]
fn grpc_java_get_retry_policies() {
    let config = parse(JAVA_RETRY_CONFIG).with_max_attempts_cap(4);
    assert!(config.method_config("/not/exist").is_none());
    assert!(config.method_config("/not_exist/Foo1").is_none());
    let retry = |path| config.method_config(path).unwrap().retry_policy().cloned();
    let policy = |n, initial, max, multiplier, codes: &[Code]| {
        GrpcRetryPolicy::new(n, ms(initial), ms(max), multiplier, codes)
            .unwrap()
            .with_max_attempts_cap(4)
    };
    assert_eq!(
        retry("/SimpleService1/not_exist"),
        Some(policy(
            3,
            2100,
            2200,
            3.0,
            &[Code::Unavailable, Code::ResourceExhausted]
        ))
    );
    let foo = policy(5, 100, 1000, 2.0, &[Code::Unavailable]);
    assert_eq!(foo.max_attempts(), 4);
    assert_eq!(retry("/SimpleService1/Foo1"), Some(foo.clone()));
    assert_eq!(retry("/SimpleService2/not_exist"), None);
    assert_eq!(retry("/SimpleService2/Foo2"), Some(foo));
}

/// grpc-java `RetryPolicyTest`, `getThrottle`: `new Throttle(10f, 0.1f)`.
#[test]
fn grpc_java_get_throttle() {
    let throttle = parse(JAVA_RETRY_CONFIG).retry_throttling().unwrap();
    assert_eq!((throttle.max_tokens(), throttle.token_ratio()), (10, 0.1));
}

/// grpc-java `HedgingPolicyTest`, `getHedgingPolicies` (`maxHedgedAttemptsLimit` 4), on its
/// `test_hedging_service_config.json`.
#[test]
fn grpc_java_get_hedging_policies() {
    let config = parse(
        r#"{
      "loadBalancingPolicy":"round_robin",
      "methodConfig":[
        {
          "name":[{"service":"SimpleService1"}],
          "waitForReady":false,
          "hedgingPolicy":{"maxAttempts":3, "hedgingDelay":"2.1s",
                           "nonFatalStatusCodes":["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}
        },
        { "name":[{"service":"SimpleService2"}], "waitForReady":false },
        {
          "name":[{"service":"SimpleService1", "method":"Foo1"}, {"service":"SimpleService2", "method":"Foo2"}],
          "waitForReady":true,
          "hedgingPolicy":{"maxAttempts":5, "hedgingDelay":"0.1s", "nonFatalStatusCodes":["UNAVAILABLE"]}
        }
      ],
      "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
    }"#,
    )
    .with_max_attempts_cap(4);
    assert!(config.method_config("/not/exist").is_none());
    assert!(config.method_config("/not_exist/Foo1").is_none());
    let hedging = |path| {
        config
            .method_config(path)
            .unwrap()
            .hedging_policy()
            .cloned()
    };
    let policy = |n, delay, codes: &[Code]| {
        HedgingPolicy::new(n, ms(delay), codes)
            .unwrap()
            .with_max_attempts_cap(4)
    };
    assert_eq!(
        hedging("/SimpleService1/not_exist"),
        Some(policy(
            3,
            2100,
            &[Code::Unavailable, Code::ResourceExhausted]
        ))
    );
    let foo = policy(5, 100, &[Code::Unavailable]);
    assert_eq!(foo.max_attempts(), 4);
    assert_eq!(hedging("/SimpleService1/Foo1"), Some(foo.clone()));
    assert_eq!(hedging("/SimpleService2/not_exist"), None);
    assert_eq!(hedging("/SimpleService2/Foo2"), Some(foo));
}

/// grpc-java `ServiceConfigUtil` (`getRetryableStatusCodesFromRetryPolicy`,
/// `getNonFatalStatusCodesFromHedgingPolicy`): "must not contain OK"; an unknown code is refused.
#[test]
fn grpc_java_codes_must_not_contain_ok() {
    let err = error(&foo_with(
        r#""retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
            "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE", 0]}"#,
    ));
    assert_eq!(
        err.to_string(),
        "methodConfig[0].retryPolicy.retryableStatusCodes: must not contain OK"
    );
    let err = error(&foo_with(
        r#""hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": ["OK"]}"#,
    ));
    assert_eq!(
        err.field(),
        "methodConfig[0].hedgingPolicy.nonFatalStatusCodes"
    );
    for (code, value) in [
        ("17", "17"),
        ("-1", "-1"),
        ("14.5", "14.5"),
        (r#""UNAVAIL""#, r#""UNAVAIL""#),
    ] {
        let err = error(&foo_with(&format!(
            r#""hedgingPolicy": {{"maxAttempts": 2, "nonFatalStatusCodes": [14, {code}]}}"#
        )));
        assert_eq!(
            err,
            ServiceConfigError::UnknownCode {
                field: "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[1]".into(),
                value: value.into()
            },
            "{code}"
        );
    }
}

// ---- Name matching -----------------------------------------------------------------------------

#[test]
fn service_and_method_beats_service_beats_default() {
    let config = parse(
        r#"{"methodConfig": [
        { "name": [{"service": "pkg.Svc", "method": "Get"}], "timeout": "3s" },
        { "name": [{}], "timeout": "1s" },
        { "name": [{"service": "pkg.Svc"}, {"service": "pkg.Other", "method": "Put"}], "timeout": "2s" }
    ]}"#,
    );
    let timeout = |path| {
        config
            .method_config(path)
            .and_then(retry_runtime::tonic::MethodConfig::timeout)
    };
    assert_eq!(timeout("/pkg.Svc/Get"), Some(Duration::from_secs(3)));
    assert_eq!(timeout("/pkg.Svc/Put"), Some(Duration::from_secs(2)));
    assert_eq!(timeout("/pkg.Other/Put"), Some(Duration::from_secs(2)));
    assert_eq!(timeout("/pkg.Other/Get"), Some(Duration::from_secs(1)));
    assert_eq!(timeout("/unknown/Get"), Some(Duration::from_secs(1)));
    // Names are case-sensitive, as gRPC's paths are.
    assert_eq!(timeout("/pkg.svc/Get"), Some(Duration::from_secs(1)));
}

#[test]
fn a_path_with_no_match_and_no_default_gives_none() {
    let config = parse(
        r#"{"methodConfig": [
        { "name": [{"service": "pkg.Svc", "method": "Get"}], "timeout": "3s" },
        { "name": [{"service": "pkg.Other"}], "timeout": "2s" }
    ]}"#,
    );
    assert!(config.method_config("/pkg.Svc/Put").is_none());
    assert!(config.method_config("/pkg.Svcs/Get").is_none());
    assert!(config.method_config("/pkg/Svc/Get").is_none());
    assert!(config.method_config("").is_none());
    assert!(config.method_config("garbage").is_none());
    assert!(config.method_config("/pkg.Other/Anything").is_some());
    assert!(parse("{}").method_config("/a/b").is_none());
    assert!(
        parse(r#"{"methodConfig": []}"#)
            .method_config("/a/b")
            .is_none()
    );
}

/// An entry without `name` applies to no method; its policies are still checked (as grpc-java
/// checks them; grpc-go skips the entry).
#[test]
fn an_entry_without_a_name_matches_nothing_but_is_checked() {
    let config = parse(r#"{"methodConfig": [{"timeout": "1s"}]}"#);
    assert!(config.method_config("/a/b").is_none());
    let err = error(r#"{"methodConfig": [{"hedgingPolicy": {"maxAttempts": 1}}]}"#);
    assert_eq!(err.field(), "methodConfig[0].hedgingPolicy.maxAttempts");
}

// ---- Leniency and typed errors -----------------------------------------------------------------

#[test]
fn unknown_fields_are_ignored() {
    let config = parse(
        r#"{
        "loadBalancingConfig": [{"round_robin": {}}, {"pick_first": {"shuffleAddressList": true}}],
        "loadBalancingPolicy": "round_robin",
        "healthCheckConfig": {"serviceName": "x"},
        "someFutureField": [1, 2, {"a": null}],
        "methodConfig": [{
            "name": [{"service": "s", "futureNameField": 1}],
            "waitForReady": true,
            "maxRequestMessageBytes": 1024,
            "maxResponseMessageBytes": "2048",
            "retryPolicy": {
                "maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
                "backoffMultiplier": 1, "retryableStatusCodes": [14],
                "perAttemptRecvTimeout": "1s"
            }
        }]
    }"#,
    );
    assert!(
        config
            .method_config("/s/m")
            .unwrap()
            .retry_policy()
            .is_some()
    );
}

/// A6's keys are camelCase, read case-sensitively as grpc-java reads them (grpc-go's
/// `encoding/json` also takes `"MaxAttempts"`, as in its `TestRetryThrottling`): a key in
/// another case is an unknown field, so the required one is missing.
#[test]
fn keys_are_case_sensitive() {
    let err = error(&foo_with(
        r#""retryPolicy": {"MaxAttempts": 4, "InitialBackoff": ".01s", "MaxBackoff": ".01s",
            "BackoffMultiplier": 1.0, "RetryableStatusCodes": ["UNAVAILABLE"]}"#,
    ));
    assert_eq!(
        err.to_string(),
        "methodConfig[0].retryPolicy.maxAttempts: is required"
    );
}

#[test]
fn wrong_types_name_their_field() {
    for (body, field, expected) in [
        (
            r#""timeout": 5"#,
            "methodConfig[0].timeout",
            r#"a duration string such as "0.1s""#,
        ),
        (
            r#""hedgingPolicy": {"maxAttempts": "3"}"#,
            "methodConfig[0].hedgingPolicy.maxAttempts",
            "a whole number",
        ),
        (
            r#""hedgingPolicy": {"maxAttempts": 2.5}"#,
            "methodConfig[0].hedgingPolicy.maxAttempts",
            "a whole number",
        ),
        (
            r#""hedgingPolicy": {"maxAttempts": true}"#,
            "methodConfig[0].hedgingPolicy.maxAttempts",
            "a whole number",
        ),
        (
            r#""hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": "UNAVAILABLE"}"#,
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes",
            "an array of status codes",
        ),
        (
            r#""hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": [14, null]}"#,
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[1]",
            "a status code name or number",
        ),
        (
            r#""hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": {"seconds": 1}}"#,
            "methodConfig[0].hedgingPolicy.hedgingDelay",
            r#"a duration string such as "0.1s""#,
        ),
        (
            r#""retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": "2", "retryableStatusCodes": [14]}"#,
            "methodConfig[0].retryPolicy.backoffMultiplier",
            "a number",
        ),
    ] {
        let err = error(&foo_with(body));
        assert_eq!(
            err,
            ServiceConfigError::WrongType {
                field: field.into(),
                expected
            },
            "{body}"
        );
        assert_eq!(err.to_string(), format!("{field}: must be {expected}"));
    }
    let err = error(r#"{"methodConfig": [{"name": [{"service": 7}]}]}"#);
    assert_eq!(
        err.to_string(),
        "methodConfig[0].name[0].service: must be a string"
    );
}

#[test]
fn a_document_of_the_wrong_shape_is_a_json_error() {
    for json in [
        "",
        "not json",
        "[]",
        "5",
        r#"{"methodConfig": {}}"#,
        r#"{"methodConfig": [5]}"#,
        r#"{"methodConfig": [{"name": {}}]}"#,
        r#"{"retryThrottling": []}"#,
    ] {
        let err = error(json);
        assert!(
            matches!(err, ServiceConfigError::Json { .. }),
            "{json}: {err:?}"
        );
        assert_eq!(err.field(), "");
        assert!(
            err.to_string().starts_with("not a gRPC service config: "),
            "{err}"
        );
    }
}

#[test]
fn null_is_a_missing_field() {
    let config = parse(r#"{"methodConfig": null, "retryThrottling": null}"#);
    assert!(config.retry_throttling().is_none());
    let config = parse(&foo_with(
        r#""timeout": null, "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": null}"#,
    ));
    assert_eq!(config.method_config("/foo/x").unwrap().timeout(), None);
    let err = error(&foo_with(r#""hedgingPolicy": {"maxAttempts": null}"#));
    assert_eq!(
        err.to_string(),
        "methodConfig[0].hedgingPolicy.maxAttempts: is required"
    );
}

#[test]
fn negative_hedging_delay_and_timeout_are_refused() {
    let err = error(&foo_with(
        r#""hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "-1s"}"#,
    ));
    assert_eq!(
        err.to_string(),
        "methodConfig[0].hedgingPolicy.hedgingDelay: must not be negative"
    );
    let err = error(&foo_with(r#""timeout": "-0.5s""#));
    assert_eq!(err.field(), "methodConfig[0].timeout");
    // "-0s" is zero.
    let config = parse(&foo_with(r#""timeout": "-0s""#));
    assert_eq!(
        config.method_config("/foo/x").unwrap().timeout(),
        Some(Duration::ZERO)
    );
}

#[test]
fn policies_built_in_code_follow_the_same_rules() {
    let d = Duration::from_secs(1);
    let codes = [Code::Unavailable];
    assert_eq!(
        GrpcRetryPolicy::new(1, d, d, 2.0, &codes)
            .unwrap_err()
            .to_string(),
        "maxAttempts: must be at least 2"
    );
    assert_eq!(
        GrpcRetryPolicy::new(2, d, Duration::ZERO, 2.0, &codes)
            .unwrap_err()
            .field(),
        "maxBackoff"
    );
    for multiplier in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            GrpcRetryPolicy::new(2, d, d, multiplier, &codes)
                .unwrap_err()
                .field(),
            "backoffMultiplier",
            "{multiplier}"
        );
    }
    assert_eq!(
        GrpcRetryPolicy::new(2, d, d, 2.0, &[Code::Ok, Code::Unavailable])
            .unwrap_err()
            .to_string(),
        "retryableStatusCodes: must not contain OK"
    );
    assert_eq!(
        HedgingPolicy::new(2, d, &[Code::Ok]).unwrap_err().field(),
        "nonFatalStatusCodes"
    );
    // A backoff multiplier below 1 is allowed (A6: greater than 0).
    assert!(GrpcRetryPolicy::new(2, d, d, 0.5, &codes).is_ok());
    // u32::MAX attempts: clamped by the cap.
    let p = GrpcRetryPolicy::new(u32::MAX, d, d, 2.0, &codes).unwrap();
    assert_eq!(p.max_attempts(), 5);
    assert_eq!(p.with_max_attempts_cap(u32::MAX).max_attempts(), u32::MAX);
}

/// Through serde, in another format: the same rules, the message with the field's path.
#[test]
fn serde_in_another_format() {
    let config: ServiceConfig = toml::from_str(
        r#"
        [[methodConfig]]
        name = [{ service = "s" }]
        timeout = "0.25s"
        [methodConfig.hedgingPolicy]
        maxAttempts = 3
        hedgingDelay = "0.05s"
        nonFatalStatusCodes = ["unavailable"]

        [retryThrottling]
        maxTokens = 20
        tokenRatio = 0.2
    "#,
    )
    .unwrap();
    let method = config.method_config("/s/m").unwrap();
    assert_eq!(method.timeout(), Some(ms(250)));
    assert_eq!(method.hedging_policy().unwrap().hedging_delay(), ms(50));
    assert_eq!(config.retry_throttling().unwrap().max_tokens(), 20);

    let err = toml::from_str::<ServiceConfig>("[retryThrottling]\nmaxTokens = 20\ntokenRatio = 0")
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("retryThrottling.tokenRatio: must be a number of at least 0.001"),
        "{err}"
    );
    let err = serde_json::from_str::<ServiceConfig>(&foo_with(r#""timeout": "1h""#)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(r#"methodConfig[0].timeout: invalid duration "1h""#),
        "{err}"
    );
}

#[test]
fn each_retry_throttling_call_is_a_fresh_throttle() {
    let config = parse(r#"{"retryThrottling": {"maxTokens": 4, "tokenRatio": 1}}"#);
    let a = config.retry_throttling().unwrap();
    a.record_failure();
    assert_eq!(a.tokens(), 3.0);
    assert_eq!(config.retry_throttling().unwrap().tokens(), 4.0);
    assert_eq!(config.clone().retry_throttling().unwrap().tokens(), 4.0);
}
