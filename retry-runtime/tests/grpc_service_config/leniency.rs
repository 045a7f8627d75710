//! What a service config may leave out or get wrong: unknown fields, case, wrong types and
//! shapes (each error naming its field's path), policies built in code, other formats.

use super::*;

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
