//! grpc-java's service-config tests (`ManagedChannelServiceConfigTest`, `RetryPolicyTest`,
//! `HedgingPolicyTest`), ported one by one.

use super::*;

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
