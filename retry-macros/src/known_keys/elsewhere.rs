//! Settings that belong to another object than the retry: a circuit breaker's, a retry budget's,
//! a bulkhead's, a throttle's (each an object of this crate, built once and named with its key),
//! or a rate limiter's, an HTTP client's, a channel's (objects outside it). Written in the
//! attribute, such a setting is told whose it is and how to pass that object, in one or two
//! sentences: "`failureRateThreshold` is a circuit breaker's setting (Resilience4j's name), not
//! the retry's: build a `reattempt::CircuitBreaker` once with
//! `CircuitBreaker::builder().failure_rate(0.5)` (in a `static` or a field) and give
//! `circuit_breaker = BREAKER`".
//!
//! The names come from the libraries users bring their habits from: Resilience4j (circuit
//! breaker, bulkhead, thread-pool bulkhead, rate limiter, time limiter), Polly v8 (circuit
//! breaker, rate limiter, concurrency limiter, timeout), Hystrix, Finagle (failure accrual, retry
//! budget), Envoy (circuit breakers, outlier detection, retry budget), Failsafe, the `failsafe`
//! crate, gRPC's service config (retry throttling) and this crate's own builders and config
//! tables (`[breaker]`, `[budget]`).

use syn::{Expr, Lit};

use super::spelling::{normalise, spellings};
use crate::render::render;

/// The object a setting belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Owner {
    Breaker,
    Budget,
    Bulkhead,
    Throttle,
    /// No object of this crate: the text says where the setting goes.
    Outside(&'static str),
}

impl Owner {
    /// (what it is, its type here, its key, the name of the `static` in the fix)
    const fn parts(self) -> Option<(&'static str, &'static str, &'static str, &'static str)> {
        Some(match self {
            Owner::Breaker => (
                "a circuit breaker",
                "CircuitBreaker",
                "circuit_breaker",
                "BREAKER",
            ),
            Owner::Budget => ("a retry budget", "RetryBudget", "budget", "BUDGET"),
            Owner::Bulkhead => ("a bulkhead", "Bulkhead", "bulkhead", "BULKHEAD"),
            Owner::Throttle => (
                "an adaptive throttle",
                "AdaptiveThrottle",
                "throttle",
                "THROTTLE",
            ),
            Owner::Outside(_) => return None,
        })
    }
}

/// What the setting is on the owner's builder here.
#[derive(Clone, Copy)]
pub(super) enum Method {
    /// The same meaning and value: `.failure_threshold(5)` (the example when no literal is given).
    Same(&'static str, &'static str),
    /// A duration: `.reset_timeout(Duration::from_secs(30))`.
    Duration(&'static str),
    /// A percentage there, a fraction here: `failureRateThreshold = 50` is `.failure_rate(0.5)`.
    Percent(&'static str),
    /// No method of the same meaning: what is nearest, or why there is none.
    Nearest(&'static str),
}

pub(super) struct Setting {
    pub(super) names: &'static [&'static str],
    pub(super) from: &'static str,
    pub(super) owner: Owner,
    pub(super) method: Method,
}

const fn s(
    names: &'static [&'static str],
    from: &'static str,
    owner: Owner,
    method: Method,
) -> Setting {
    Setting {
        names,
        from,
        owner,
        method,
    }
}

const SLIDING_WINDOW: &str = "the window here counts calls, not time: \
    `.sliding_window(100)` judges the last 100 calls";
const RATE_LIMITER: Owner = Owner::Outside(
    "a rate limiter's setting: reattempt has no rate limiter; limit the rate around the call \
     (tower's `RateLimitLayer`, the `governor` crate). The nearest guard here is \
     `throttle = …`, a `reattempt::AdaptiveThrottle` that sheds calls while the dependency \
     rejects them",
);
const HTTP_CLIENT: Owner = Owner::Outside(
    "a setting of the HTTP client or its connection pool (reqwest's `ClientBuilder`, hyper's, \
     the AWS SDK's `TimeoutConfig`), not the retry's: set it where the client is built. The \
     retry's own limits are `timeout` (one attempt) and `max_elapsed` (the whole call)",
);
const CHANNEL: Owner = Owner::Outside(
    "a setting of the gRPC channel or call, not the retry's: set it on tonic's `Endpoint` or \
     `Request`. The retry's own limits are `timeout` (one attempt) and `max_elapsed`",
);

/// The table. Names are compared by their normalised spelling (any case style, with or without
/// a unit suffix or a `with`/`set` prefix), after the retry's own names (`libraries`).
pub(super) const SETTINGS: &[Setting] = &[
    // This crate's own builders and config tables.
    s(
        &[
            "failure_threshold",
            "consecutive_failures",
            "consecutiveFailures",
            "consecutive_5xx",
            "consecutive_gateway_failure",
            "circuitBreakerRequestFailureThreshold",
        ],
        "the name in this crate's builder and `[breaker]` table, the `failsafe` crate, Finagle and Envoy",
        Owner::Breaker,
        Method::Same("failure_threshold", "5"),
    ),
    s(
        &[
            "failure_rate",
            "failureRatio",
            "failure_ratio",
            "success_rate_over_time_window",
        ],
        "a name from this crate's builder, Polly or the `failsafe` crate",
        Owner::Breaker,
        Method::Same("failure_rate", "0.5"),
    ),
    s(
        &[
            "failureRateThreshold",
            "circuitBreakerErrorThresholdPercentage",
            "errorThresholdPercentage",
            "failure_percentage_threshold",
        ],
        "Resilience4j's, Hystrix's or Envoy's name, a percentage",
        Owner::Breaker,
        Method::Percent("failure_rate"),
    ),
    s(
        &[
            "sliding_window",
            "slidingWindowSize",
            "sliding_window_size",
            "ringBufferSizeInClosedState",
        ],
        "a name from this crate's builder or Resilience4j",
        Owner::Breaker,
        Method::Same("sliding_window", "100"),
    ),
    s(
        &[
            "slidingWindowType",
            "samplingDuration",
            "metricsRollingStatisticalWindow",
            "metricsRollingStatisticalWindowInMilliseconds",
            "rollingCountTimeout",
            "rollingCountBuckets",
            "rolling_count_timeout",
        ],
        "a name from Resilience4j, Polly or Hystrix",
        Owner::Breaker,
        Method::Nearest(SLIDING_WINDOW),
    ),
    s(
        &[
            "minimum_calls",
            "minimumNumberOfCalls",
            "minimumThroughput",
            "circuitBreakerRequestVolumeThreshold",
            "requestVolumeThreshold",
            "request_volume_threshold",
            "volumeThreshold",
            "volume_threshold",
            "allowWarmUp",
        ],
        "a name from this crate's builder, Resilience4j, Polly or Hystrix",
        Owner::Breaker,
        Method::Same("minimum_calls", "20"),
    ),
    s(
        &[
            "reset_timeout",
            "waitDurationInOpenState",
            "breakDuration",
            "break_duration",
            "circuitBreakerSleepWindow",
            "circuitBreakerSleepWindowInMilliseconds",
            "sleepWindowInMilliseconds",
            "markDeadFor",
            "mark_dead_for",
            "base_ejection_time",
            "open_timeout",
            "openTimeout",
            "cooldown",
            "cool_down",
            "recovery_timeout",
            "halfOpenAfter",
            "half_open_after",
        ],
        "how long it stays open, in this crate's builder, Resilience4j, Polly, Hystrix, Finagle or Envoy",
        Owner::Breaker,
        Method::Duration("reset_timeout"),
    ),
    s(
        &[
            "half_open_probes",
            "permittedNumberOfCallsInHalfOpenState",
            "successThreshold",
            "success_threshold",
            "half_open_max_calls",
            "halfOpenMaxCalls",
        ],
        "a name from this crate's builder, Resilience4j or Failsafe",
        Owner::Breaker,
        Method::Same("half_open_probes", "1"),
    ),
    s(
        &[
            "slowCallRateThreshold",
            "slowCallDurationThreshold",
            "slow_call_duration_threshold",
        ],
        "Resilience4j's name",
        Owner::Breaker,
        Method::Nearest(
            "slow calls are not counted here; a `timeout` makes a slow attempt a failure, which the breaker counts",
        ),
    ),
    s(
        &[
            "maxWaitDurationInHalfOpenState",
            "automaticTransitionFromOpenToHalfOpenEnabled",
            "circuitBreakerForceOpen",
            "circuitBreakerForceClosed",
            "circuitBreakerEnabled",
            "breakDurationGenerator",
            "manualControl",
            "stateProvider",
            "max_ejection_percent",
            "failureAccrual",
            "failure_accrual",
        ],
        "a name from Resilience4j, Polly, Hystrix, Finagle or Envoy",
        Owner::Breaker,
        Method::Nearest(
            "it has no counterpart: the breaker here is set by `failure_threshold` or `failure_rate`, `reset_timeout` and `half_open_probes`",
        ),
    ),
    s(
        &[
            "recordExceptions",
            "recordFailurePredicate",
            "recordResultPredicate",
            "ignoreExceptionPredicate",
            "errorFilter",
            "error_filter",
        ],
        "a circuit breaker's name in Resilience4j or opossum",
        Owner::Breaker,
        Method::Nearest(
            "the breaker counts what the retry calls a failure: `retry_on`, `no_retry_on` and `retry_if` decide it",
        ),
    ),
    s(
        &[
            "ConsecutiveBreaker",
            "consecutiveBreaker",
            "SamplingBreaker",
            "samplingBreaker",
        ],
        "cockatiel's breaker kinds",
        Owner::Breaker,
        Method::Nearest(
            "a `ConsecutiveBreaker(n)` is `.failure_threshold(n)`, a `SamplingBreaker` is `.failure_rate(0.5)` with `.sliding_window(100)` and `.minimum_calls(20)`",
        ),
    ),
    s(
        &["onOpened", "onClosed", "onHalfOpened", "onStateTransition"],
        "Polly's or Resilience4j's circuit breaker event",
        Owner::Breaker,
        Method::Nearest("its state changes are `tracing` events, and `state()` reads it"),
    ),
    // Retry budgets and gRPC's retry throttling.
    s(
        &["max_tokens", "maxTokens"],
        "a name from this crate's builder or gRPC's `retryThrottling`",
        Owner::Budget,
        Method::Same("max_tokens", "500"),
    ),
    s(
        &["initial_tokens", "initialTokens"],
        "a name from this crate's builder or the AWS SDKs' retry quota",
        Owner::Budget,
        Method::Same("initial_tokens", "0"),
    ),
    s(
        &["retry_cost", "retryCost"],
        "a name from this crate's builder or the AWS SDKs' retry quota",
        Owner::Budget,
        Method::Same("retry_cost", "5"),
    ),
    s(
        &["timeout_cost", "timeout_retry_cost", "timeoutRetryCost"],
        "a name from this crate's builder or the AWS SDKs' retry quota",
        Owner::Budget,
        Method::Same("timeout_cost", "10"),
    ),
    s(
        &["throttling_cost"],
        "the name in this crate's builder",
        Owner::Budget,
        Method::Same("throttling_cost", "5"),
    ),
    s(
        &[
            "success_deposit",
            "no_retry_increment",
            "noRetryIncrement",
            "success_reward",
        ],
        "a name from this crate's builder or the AWS SDKs' retry quota",
        Owner::Budget,
        Method::Same("success_deposit", "1"),
    ),
    s(
        &[
            "tokenRatio",
            "token_ratio",
            "percentCanRetry",
            "percent_can_retry",
            "budget_percent",
            "budgetPercent",
            "minRetriesPerSec",
            "min_retries_per_sec",
            "min_retry_concurrency",
            "initial_retry_tokens",
            "retry_quota_size",
            "ttl",
        ],
        "a name from gRPC's `retryThrottling`, Finagle, Envoy or the AWS SDKs",
        Owner::Budget,
        Method::Nearest(
            "the budget here is a token bucket: a retry costs `retry_cost` tokens and a first-try success pays `success_deposit` back, so `retry_cost(5)` with `success_deposit(1)` lets about one call in five retry",
        ),
    ),
    // Bulkheads and concurrency limiters.
    s(
        &[
            "max_concurrent",
            "maxConcurrentCalls",
            "PermitLimit",
            "maxConcurrency",
            "max_concurrency",
            "maxConcurrentRequests",
            "executionIsolationSemaphoreMaxConcurrentRequests",
            "capacity",
            "max_requests",
            "max_in_flight",
            "maxThreadPoolSize",
            "coreThreadPoolSize",
            "coreSize",
        ],
        "a name from this crate's builder, Resilience4j, Polly, Failsafe, Hystrix or Envoy",
        Owner::Bulkhead,
        Method::Same("max_concurrent", "10"),
    ),
    s(
        &[
            "maxWaitDuration",
            "maxWaitTime",
            "max_wait_time",
            "queueTimeout",
        ],
        "a name from Resilience4j or Failsafe",
        Owner::Bulkhead,
        Method::Duration("max_wait"),
    ),
    s(
        &[
            "QueueLimit",
            "queueCapacity",
            "queue_capacity",
            "maxQueueSize",
            "max_pending_requests",
            "keepAliveDuration",
        ],
        "a name from Polly, Resilience4j, Hystrix or Envoy",
        Owner::Bulkhead,
        Method::Nearest(
            "a call waits for a slot at most `max_wait` (`.max_wait(Duration::from_millis(100))`) rather than in a queue of a length",
        ),
    ),
    // The adaptive throttle (Google SRE's client-side throttling, the AWS SDKs' adaptive mode).
    s(
        &[
            "k",
            "accepts_multiplier",
            "throttle_k",
            "window",
            "window_requests",
            "max_send_rate",
            "min_fill_rate",
        ],
        "the name in this crate's builder",
        Owner::Throttle,
        Method::Nearest(
            "its builder takes `.k(2.0)`, `.window(Duration::from_secs(120))` and `.window_requests(n)`",
        ),
    ),
    // Rate limiters.
    s(
        &[
            "limitForPeriod",
            "limitRefreshPeriod",
            "TokenLimit",
            "TokensPerPeriod",
            "ReplenishmentPeriod",
            "SegmentsPerWindow",
            "rate_limit",
            "rateLimit",
            "requests_per_second",
            "max_rps",
            "permits_per_second",
            "permitsPerSecond",
            "burst",
        ],
        "a name from Resilience4j's, Polly's or Guava's rate limiter",
        RATE_LIMITER,
        Method::Nearest(""),
    ),
    // HTTP clients, connection pools, channels.
    s(
        &[
            "connect_timeout",
            "connectTimeout",
            "read_timeout",
            "readTimeout",
            "write_timeout",
            "writeTimeout",
            "pool_idle_timeout",
            "pool_max_idle_per_host",
            "tcp_keepalive",
            "keep_alive",
            "keepAlive",
            "max_connections",
            "maxConnections",
            "max_connection_pools",
            "socket_timeout",
            "socketTimeout",
            "redirect",
            "max_redirects",
            "follow_redirects",
            "remove_headers_on_redirect",
        ],
        "a name from reqwest, hyper, the AWS SDKs or Envoy",
        HTTP_CLIENT,
        Method::Nearest(""),
    ),
    s(
        &[
            "waitForReady",
            "wait_for_ready",
            "http2_keep_alive_interval",
            "keep_alive_timeout",
            "concurrency_limit",
            "initial_stream_window_size",
        ],
        "a name from gRPC's service config or tonic",
        CHANNEL,
        Method::Nearest(""),
    ),
    // Time limiters.
    s(
        &[
            "cancelRunningFuture",
            "cancel_running_future",
            "withInterrupt",
            "TimeoutGenerator",
            "onTimeout",
        ],
        "Resilience4j's, Failsafe's or Polly's time limiter",
        Owner::Outside(
            "a time limiter's setting: here the per-attempt limit is `timeout = \"1s\"`, and an attempt past it is always dropped (cancelled) and counts as a failure; to see it, `on_retry` gets the error `timeout_into` made of `reattempt::Elapsed`",
        ),
        Method::Nearest(""),
    ),
];

/// The setting `key` names, found by any of its spellings, with the unit its name gives an
/// integer value (`sleepWindowInMilliseconds`).
pub(super) fn find(key: &str) -> Option<(&'static Setting, Option<&'static str>)> {
    spellings(key).into_iter().find_map(|(text, unit)| {
        SETTINGS
            .iter()
            .find(|s| s.names.iter().any(|n| normalise(n) == text))
            .map(|s| (s, unit))
    })
}

/// A number written as a literal.
fn number(value: Option<&Expr>) -> Option<f64> {
    match value? {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse().ok(),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse().ok(),
        _ => None,
    }
}

/// `Duration::from_secs(30)` for a value written `"30s"`, `30` with a unit in the name, or
/// `Duration::from_secs(30)`; the example otherwise.
fn duration_code(value: Option<&Expr>, unit: Option<&str>) -> String {
    let d = match value {
        Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        })) => retry_rules::parse_duration(&s.value()).ok(),
        Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        })) => {
            let n: u64 = i.base10_parse().unwrap_or(0);
            match unit {
                Some("ms") => Some(std::time::Duration::from_millis(n)),
                Some("s") => Some(std::time::Duration::from_secs(n)),
                Some("m") => Some(std::time::Duration::from_secs(n * 60)),
                _ => None,
            }
        }
        Some(call @ Expr::Call(_)) if crate::value_rules::duration_call(call).is_some() => {
            return render(call);
        }
        _ => None,
    };
    match d.filter(|d| !d.is_zero()) {
        Some(d) if d.subsec_nanos() == 0 => format!("Duration::from_secs({})", d.as_secs()),
        Some(d) => format!("Duration::from_millis({})", d.as_millis()),
        None => "Duration::from_secs(30)".to_owned(),
    }
}

/// The message for a setting of another object, if `key` is one: whose it is, then how to
/// pass that object (with the setting on its builder, where it has one).
pub(super) fn explain(key: &str, value: Option<&Expr>) -> Option<String> {
    let (setting, unit) = find(key)?;
    let head = format!("`{key}` is not a key of #[retryable]");
    let from = setting.from;
    let Some((what, ty, owner_key, upper)) = setting.owner.parts() else {
        let Owner::Outside(where_) = setting.owner else {
            unreachable!("an owner of this crate has parts")
        };
        return Some(format!("{head} ({from}): it is {where_}"));
    };
    let given = format!("in a `static` or a field, and give `{owner_key} = {upper}`");
    let call = match setting.method {
        Method::Same(method, example) => {
            let v = value
                .filter(|v| matches!(v, Expr::Lit(_)))
                .map_or_else(|| example.to_owned(), render);
            format!("`{ty}::builder().{method}({v})`")
        }
        Method::Duration(method) => {
            format!("`{ty}::builder().{method}({})`", duration_code(value, unit))
        }
        Method::Percent(method) => {
            let f = number(value)
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .unwrap_or(50.0)
                / 100.0;
            format!("`{ty}::builder().{method}({f})` (a fraction here, not a percentage)")
        }
        Method::Nearest(text) => {
            return Some(format!(
                "{head}: it is {what}'s setting ({from}), not the retry's; {text}. \
                 Build a `reattempt::{ty}` once, {given}"
            ));
        }
    };
    Some(format!(
        "{head}: it is {what}'s setting ({from}), not the retry's. \
         Build a `reattempt::{ty}` with it once, {call}, {given}"
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{KEYS, unknown_key};
    use super::*;

    fn expr(s: &str) -> Expr {
        syn::parse_str(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_breakers_setting_says_whose_it_is_and_how_to_pass_it() {
        let m = unknown_key("failure_threshold", Some(&expr("5")));
        assert!(m.contains("a circuit breaker's setting"), "{m}");
        assert!(m.contains("`circuit_breaker = BREAKER`"), "{m}");
        assert!(
            m.contains("`CircuitBreaker::builder().failure_threshold(5)`"),
            "{m}"
        );
        let m = unknown_key("waitDurationInOpenState", Some(&expr("\"60s\"")));
        assert!(m.contains(".reset_timeout(Duration::from_secs(60))"), "{m}");
        let m = unknown_key(
            "circuitBreakerSleepWindowInMilliseconds",
            Some(&expr("5000")),
        );
        assert!(m.contains(".reset_timeout(Duration::from_secs(5))"), "{m}");
        let m = unknown_key("BreakDuration", Some(&expr("\"1500ms\"")));
        assert!(
            m.contains(".reset_timeout(Duration::from_millis(1500))"),
            "{m}"
        );
        let m = unknown_key("failureRateThreshold", Some(&expr("50")));
        assert!(m.contains(".failure_rate(0.5)"), "{m}");
        let m = unknown_key("withFailureThreshold", Some(&expr("3")));
        assert!(m.contains(".failure_threshold(3)"), "{m}");
    }

    #[test]
    fn each_owner_is_named_with_its_key() {
        for (key, owner_key) in [
            ("retry_cost", "budget = BUDGET"),
            ("percentCanRetry", "budget = BUDGET"),
            ("maxConcurrentCalls", "bulkhead = BULKHEAD"),
            ("max_pending_requests", "bulkhead = BULKHEAD"),
            ("window_requests", "throttle = THROTTLE"),
            ("slowCallDurationThreshold", "circuit_breaker = BREAKER"),
        ] {
            let m = unknown_key(key, Some(&expr("10")));
            assert!(m.contains(owner_key), "{key}: {m}");
            assert!(
                m.starts_with(&format!("`{key}` is not a key of #[retryable]: it is ")),
                "{m}"
            );
        }
        for (key, place) in [
            ("limitForPeriod", "rate limiter"),
            ("connect_timeout", "HTTP client"),
            ("waitForReady", "gRPC channel"),
            ("cancelRunningFuture", "time limiter"),
        ] {
            let m = unknown_key(key, None);
            assert!(
                m.contains(place) && !m.contains("the keys are"),
                "{key}: {m}"
            );
        }
    }

    #[test]
    fn names_are_found_in_any_case_style_and_are_no_key() {
        for setting in SETTINGS {
            for name in setting.names {
                assert!(!KEYS.contains(name), "{name} is a key");
                for variant in [name.to_ascii_uppercase(), super::super::snake_case(name)] {
                    assert!(find(&variant).is_some(), "{variant} (from {name})");
                }
            }
        }
    }

    /// A setting of another object is not taken for one of the retry's by another table.
    #[test]
    fn the_retrys_own_names_do_not_hide_these() {
        for setting in SETTINGS {
            for name in setting.names {
                assert_eq!(
                    unknown_key(name, None),
                    explain(name, None).unwrap_or_default()
                );
            }
        }
    }
}
