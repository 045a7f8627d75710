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

mod grpc_go;
mod grpc_java;
mod leniency;
