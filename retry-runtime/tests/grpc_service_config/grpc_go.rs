//! grpc-go's service-config tests (`service_config_test.go`,
//! `internal/serviceconfig/duration_test.go`), ported one by one.

use super::*;

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
