//! Names other retry libraries give the retry's own settings (Spring Retry, Resilience4j,
//! tenacity, backon, tokio-retry, Polly, Failsafe, failsafe-go, cockatiel, p-retry, axios-retry,
//! urllib3, Finagle, gRPC's service config, the AWS SDKs, Envoy, Hystrix, .NET's HTTP client
//! resilience) and common generic names, each mapped to what it is here: a key, a count of retries,
//! or an explanation. Settings of other objects (a breaker's threshold) are `elsewhere`'s.

/// What a foreign key is here.
#[derive(Clone, Copy)]
pub(super) enum Here {
    /// The same meaning under another name; the value carries over (durations become strings).
    Key(&'static str),
    /// A count of retries: here `max_attempts`, which counts the first attempt, so n + 1.
    Retries,
    /// No single key: the explanation says what to write.
    Explain,
}

pub(super) struct Known {
    pub(super) names: &'static [&'static str],
    pub(super) from: &'static str,
    pub(super) here: Here,
    pub(super) why: &'static str,
}

const fn k(
    names: &'static [&'static str],
    from: &'static str,
    here: Here,
    why: &'static str,
) -> Known {
    Known {
        names,
        from,
        here,
        why,
    }
}

pub(super) const MAX_ATTEMPTS_WHY: &str = "the total number of attempts, the first one included";

/// The table. Names are compared exactly (case matters: `maxAttempts` is Spring's spelling).
pub(super) const TABLE: &[Known] = &[
    // Attempts and retries.
    k(
        &["maxAttempts", "max_tries", "maxTries", "attempts", "tries"],
        "Spring Retry's and Resilience4j's name",
        Here::Key("max_attempts"),
        MAX_ATTEMPTS_WHY,
    ),
    k(
        &["stop_after_attempt"],
        "tenacity's name",
        Here::Key("max_attempts"),
        MAX_ATTEMPTS_WHY,
    ),
    k(
        &[
            "max_retries",
            "maxRetries",
            "retries",
            "max_retry",
            "num_retries",
            "retry_count",
            "retry_times",
            "times",
        ],
        "a common name for a count of retries",
        Here::Retries,
        "",
    ),
    k(&["max_times"], "backon's name", Here::Retries, ""),
    k(&["retryCount"], "Polly's name", Here::Retries, ""),
    k(&["take"], "tokio-retry's `.take(n)`", Here::Retries, ""),
    k(
        &["stop"],
        "tenacity's name",
        Here::Explain,
        "stop after n attempts is `max_attempts = n`; stop after a time is `max_elapsed = \"30s\"`",
    ),
    // Delays.
    k(
        &[
            "backoff_delay",
            "initial_delay",
            "initialDelay",
            "initial_interval",
            "initialInterval",
            "base_delay",
            "baseDelay",
            "min_delay",
            "minDelay",
            "min_interval",
            "interval",
            "retry_delay",
            "retry_interval",
            "delay_ms",
            "backoff_ms",
            "sleep",
            "wait_fixed",
        ],
        "a name from backon, Spring Retry or tenacity",
        Here::Key("delay"),
        "the first delay between attempts (`backoff` and `multiplier` make it grow)",
    ),
    k(
        &["waitDuration", "wait_duration"],
        "Resilience4j's name",
        Here::Key("delay"),
        "the first delay between attempts (`backoff` and `multiplier` make it grow)",
    ),
    k(
        &[
            "sleepDurationProvider",
            "intervalFunction",
            "intervalBiFunction",
            "adjust",
        ],
        "a name from Polly, Resilience4j or backon",
        Here::Key("delay_for"),
        "a function choosing the delay from the error, `Fn(&E, u32, Duration) -> Option<Duration>` \
         (the attempt that failed, the schedule's delay; `None` keeps it)",
    ),
    k(
        &["wait", "strategy"],
        "a name from tenacity, Polly or Resilience4j",
        Here::Explain,
        "the wait between attempts is the keys `delay = \"200ms\"`, `backoff = \"exponential\"`, \
         `multiplier = 2`, `max_delay = \"10s\"` and `jitter = \"full\"`",
    ),
    k(
        &[
            "wait_exponential",
            "ExponentialBackoff",
            "exponential_backoff",
            "exponential",
        ],
        "a name from tenacity or tokio-retry",
        Here::Explain,
        "exponential backoff is the default here: set `delay = \"100ms\"` (the first wait), \
         `multiplier = 2` and `max_delay = \"10s\"`, or `backoff = \"exponential\"` to say so",
    ),
    k(
        &[
            "max_interval",
            "maxInterval",
            "maxDelay",
            "max_backoff",
            "maxBackoff",
            "max_wait",
            "cap",
        ],
        "a name from Spring Retry's @Backoff or other backoff libraries",
        Here::Key("max_delay"),
        "the ceiling of one delay, before jitter",
    ),
    k(
        &[
            "factor",
            "backoff_multiplier",
            "exponential_base",
            "exp_base",
            "backoffMultiplier",
        ],
        "a name from backon or tenacity",
        Here::Key("multiplier"),
        "the growth factor of exponential backoff",
    ),
    k(
        &[
            "with_jitter",
            "randomization_factor",
            "randomizationFactor",
            "randomize",
        ],
        "a name from backon, the backoff crate or Resilience4j",
        Here::Explain,
        "jitter is on by default (\"full\"); choose with `jitter = \"none\" | \"full\" | \"equal\" | \
         \"decorrelated\"`, or a factor in (0, 1] such as `jitter = 0.5`",
    ),
    // Hedging.
    k(
        &[
            "hedge_delay",
            "hedging_delay",
            "hedge",
            "hedging",
            "delay_between_hedges",
        ],
        "a name from Polly's and gRPC's hedging",
        Here::Key("hedge_after"),
        "the delay after which the next attempt starts alongside is `hedge_after = \"50ms\"` (or `\"p95\"`)",
    ),
    // Timeouts and deadlines.
    k(
        &[
            "timeout_ms",
            "timeout_secs",
            "attempt_timeout",
            "per_attempt_timeout",
            "timeoutDuration",
        ],
        "a name from other libraries and Resilience4j's TimeLimiter",
        Here::Key("timeout"),
        "the limit of one attempt",
    ),
    k(
        &[
            "stop_after_delay",
            "max_elapsed_time",
            "maxElapsedTime",
            "max_duration",
            "total_timeout",
            "deadline",
            "max_total_delay",
            "total_delay",
        ],
        "a name from tenacity or the backoff crate",
        Here::Key("max_elapsed"),
        "the limit of all attempts and sleeps together",
    ),
    // Which errors.
    k(
        &[
            "include",
            "retryFor",
            "retry_for",
            "value",
            "retryOn",
            "retryExceptions",
            "retry_if_exception_type",
            "handle",
            "errors",
            "exceptions",
        ],
        "a name from Spring Retry, Resilience4j, tenacity or Polly",
        Here::Key("retry_on"),
        "the errors to retry, as patterns of your error type",
    ),
    k(
        &[
            "exclude",
            "noRetryFor",
            "no_retry_for",
            "notRecoverable",
            "ignoreExceptions",
            "ignore",
            "dont_retry_on",
        ],
        "a name from Spring Retry or Resilience4j",
        Here::Key("no_retry_on"),
        "the errors never to retry, as patterns of your error type",
    ),
    k(
        &[
            "when",
            "retry",
            "retry_when",
            "predicate",
            "condition",
            "retryExceptionPredicate",
        ],
        "a name from backon, tenacity or Resilience4j",
        Here::Key("retry_if"),
        "a predicate on the error, `Fn(&E) -> bool`",
    ),
    k(
        &["retryOnResult", "retry_if_result", "retry_on_result"],
        "a name from Resilience4j or tenacity",
        Here::Key("retry_if_ok"),
        "a predicate on the `Ok` value, `Fn(&T) -> bool`",
    ),
    // Hooks and fallbacks.
    k(
        &[
            "notify",
            "before_sleep",
            "onRetry",
            "on_backoff",
            "before",
            "listeners",
        ],
        "a name from backon, tenacity, Polly or Spring Retry",
        Here::Key("on_retry"),
        "a hook called before each sleep, `Fn(&E, &reattempt::RetryContext, Duration)`",
    ),
    k(
        &[
            "fallback",
            "fallbackMethod",
            "fallback_method",
            "recover_with",
            "on_failure",
        ],
        "a name from Resilience4j or Polly",
        Here::Key("recover"),
        "the path of a #[recover] fn, called with the final error",
    ),
    k(
        &["reraise"],
        "tenacity's name",
        Here::Explain,
        "the final error is always returned as it is; to change it, use `recover = fallback`",
    ),
    k(
        &[
            "circuitBreaker",
            "breaker",
            "circuit",
            "circuit_breaker_name",
        ],
        "a name from Resilience4j and others",
        Here::Key("circuit_breaker"),
        "a `CircuitBreaker` the call borrows, such as a `static`",
    ),
    k(
        &["retry_budget", "retryBudget", "token_bucket", "quota"],
        "a common name",
        Here::Key("budget"),
        "a `RetryBudget` the call borrows, such as a `static`",
    ),
    k(
        &["config", "retryConfig", "retry_policy", "retryPolicy"],
        "a name from Resilience4j or Spring Retry",
        Here::Key("policy"),
        "a `RetryPolicy` the call borrows, the whole schedule at run time",
    ),
    // Polly v8's option names (C# properties, PascalCase) and Resilience4j's builder names,
    // beyond those that are keys here in another case style (`MaxDelay`, `Delay`, `OnRetry`,
    // `Timeout`), which the normalised lookup finds.
    k(
        &["MaxRetryAttempts", "retry_attempts", "numRetries"],
        "Polly's name",
        Here::Retries,
        "",
    ),
    k(
        &["MaxHedgedAttempts"],
        "Polly's hedging name",
        Here::Explain,
        "`max_attempts` counts the first attempt and every hedge: `MaxHedgedAttempts = n` is \
         `max_attempts = n + 1`, beside `hedge_after = \"50ms\"`",
    ),
    k(
        &["BackoffType", "enableExponentialBackoff"],
        "a name from Polly or Resilience4j",
        Here::Explain,
        "the shape of the delays is `backoff = \"exponential\"` (the default), `\"linear\"` or \
         `\"fixed\"`",
    ),
    k(
        &["UseJitter", "enableRandomizedWait", "random"],
        "a name from Polly, Resilience4j or Spring's @Backoff",
        Here::Explain,
        "jitter is on by default (\"full\"); choose with `jitter = \"none\" | \"full\" | \"equal\" | \
         \"decorrelated\"`, or a factor in (0, 1] such as `jitter = 0.5` (delay × a random 0.5–1.5)",
    ),
    k(
        &["randomizedWaitFactor"],
        "Resilience4j's name",
        Here::Key("jitter"),
        "each delay times a random factor in [1 − f, 1 + f], f in (0, 1]",
    ),
    k(
        &["exponentialBackoffMultiplier"],
        "Resilience4j's name",
        Here::Key("multiplier"),
        "the growth factor of exponential backoff",
    ),
    k(
        &["exponentialMaxWaitDuration"],
        "Resilience4j's name",
        Here::Key("max_delay"),
        "the ceiling of one delay, before jitter",
    ),
    k(
        &["ShouldHandle", "retryOnExceptionPredicate"],
        "a name from Polly or Resilience4j",
        Here::Key("retry_if"),
        "a predicate on the error, `Fn(&E) -> bool`",
    ),
    k(
        &["retryOnResultPredicate"],
        "Resilience4j's name",
        Here::Key("retry_if_ok"),
        "a predicate on the `Ok` value, `Fn(&T) -> bool`",
    ),
    k(
        &["DelayGenerator"],
        "Polly's name",
        Here::Key("delay_for"),
        "a function choosing the delay from the error, `Fn(&E, u32, Duration) -> Option<Duration>` \
         (the attempt that failed, the schedule's delay; `None` keeps it)",
    ),
    k(
        &["failAfterMaxAttempts"],
        "Resilience4j's name",
        Here::Explain,
        "the call returns the last error once its attempts are spent, always; to turn it into \
         another, use `recover = fallback`",
    ),
    k(
        &[
            "maxAttemptsExpression",
            "delayExpression",
            "maxDelayExpression",
            "multiplierExpression",
            "randomExpression",
        ],
        "Spring Retry's name",
        Here::Explain,
        "the keys take literals, checked at compile time; a schedule from configuration is a \
         `reattempt::RetryPolicy` built at run time and passed as `policy = …`",
    ),
    // tenacity, beyond the names above.
    k(
        &["retry_error_callback"],
        "tenacity's name",
        Here::Key("recover"),
        "the path of a #[recover] fn, called with the final error",
    ),
    k(
        &[
            "retry_if_exception",
            "retry_if_exception_message",
            "retry_if_exception_cause_type",
            "retryOnException",
            "handleIf",
            "exceptionExpression",
        ],
        "a name from tenacity, Resilience4j, Failsafe or Spring Retry",
        Here::Key("retry_if"),
        "a predicate on the error, `Fn(&E) -> bool`",
    ),
    k(
        &[
            "retry_if_not_exception_type",
            "retry_unless_exception_type",
            "abortOn",
        ],
        "a name from tenacity or Failsafe",
        Here::Key("no_retry_on"),
        "the errors never to retry, as patterns of your error type",
    ),
    k(
        &["handleResult", "handleResultIf"],
        "Failsafe's name",
        Here::Key("retry_if_ok"),
        "a predicate on the `Ok` value, `Fn(&T) -> bool`",
    ),
    k(
        &["retry_if_not_result", "abortIf", "abortWhen"],
        "a name from tenacity or Failsafe",
        Here::Explain,
        "a predicate decides: `retry_if_ok = |v| !done(v)` retries an `Ok` value, \
         `retry_if = |e| !fatal(e)` an error",
    ),
    k(
        &["retry_any", "retry_all"],
        "tenacity's name",
        Here::Explain,
        "predicates combine in one closure: `retry_if = |e| a(e) || b(e)` (patterns: \
         `retry_on = [E::A | E::B]`)",
    ),
    k(
        &[
            "wait_random_exponential",
            "wait_full_jitter",
            "wait_exponential_jitter",
        ],
        "tenacity's name",
        Here::Explain,
        "exponential backoff with full jitter is the default here: set `delay = \"100ms\"` (the \
         first wait), `multiplier = 2`, `max_delay = \"10s\"`, and `jitter = \"full\"` to say so",
    ),
    k(
        &["wait_random"],
        "tenacity's name",
        Here::Explain,
        "a random wait is jitter on a fixed delay: `backoff = \"fixed\", delay = \"1s\", jitter = \
         \"full\"` waits between 0 and 1 s",
    ),
    k(
        &[
            "wait_incrementing",
            "linear",
            "linear_backoff",
            "LinearBackoff",
        ],
        "a name from tenacity or other backoff libraries",
        Here::Explain,
        "a delay that grows by a step is `backoff = \"linear\"` with `delay = \"1s\"` (1 s, 2 s, 3 s, …)",
    ),
    k(
        &["wait_chain", "wait_combine", "delayFn", "delayFnOn"],
        "a name from tenacity or Failsafe",
        Here::Key("delay_for"),
        "a function choosing the delay from the error, `Fn(&E, u32, Duration) -> Option<Duration>` \
         (the attempt that failed, the schedule's delay; `None` keeps it)",
    ),
    k(
        &["wait_none", "no_wait", "no_delay", "immediate"],
        "a name from tenacity or other retry libraries",
        Here::Explain,
        "a retry here always waits (a retry at once meets the same failure): the smallest wait \
         is `delay = \"1ms\"`",
    ),
    k(
        &[
            "stop_never",
            "retry_forever",
            "forever",
            "infinite",
            "unlimited",
            "without_max_times",
            "indefinitely",
        ],
        "a name from tenacity or backon",
        Here::Explain,
        "for \"until the deadline\", write `max_attempts = u32::MAX` with `max_elapsed = \"30s\"` \
         (or an enclosing call's deadline) to end it",
    ),
    k(
        &["stop_before_delay"],
        "tenacity's name",
        Here::Key("max_elapsed"),
        "the limit of all attempts and sleeps together",
    ),
    k(
        &[
            "before_sleep_log",
            "after",
            "after_log",
            "onFailedAttempt",
            "OnHedging",
        ],
        "a name from tenacity, Failsafe or Polly",
        Here::Key("on_retry"),
        "a hook called before each sleep, `Fn(&E, &reattempt::RetryContext, Duration)`",
    ),
    k(
        &["before_log", "before_attempt", "onAttempt"],
        "a name from tenacity or other retry libraries",
        Here::Explain,
        "no hook runs before an attempt; `on_retry = hook` runs before each sleep, and \
         `reattempt::context()` in the body gives the attempt's number",
    ),
    // Polly's, Failsafe's and Spring Retry's names, beyond those above.
    k(
        &["FallbackAction", "onRetriesExceeded", "onRetryExceeded"],
        "a name from Polly or Failsafe",
        Here::Key("recover"),
        "the path of a #[recover] fn, called with the final error",
    ),
    k(
        &["InstanceName"],
        "Polly's name",
        Here::Key("name"),
        "the label in traces and metrics, a string",
    ),
    k(
        &[
            "stateful",
            "interceptor",
            "sleeper",
            "consumeResultBeforeRetryAttempt",
        ],
        "a name from Spring Retry or Resilience4j",
        Here::Explain,
        "each call retries its own attempts, sleeping on tokio's clock (a blocking fn on the \
         thread's), with nothing to set beyond the schedule, the predicates and the guards",
    ),
    k(
        &[
            "fibonacci",
            "FibonacciBackoff",
            "FibonacciBuilder",
            "fibonacci_backoff",
        ],
        "a name from backon or tokio-retry",
        Here::Explain,
        "there is no Fibonacci backoff: `backoff = \"exponential\"` with `multiplier = 1.6` grows \
         at its rate",
    ),
    k(
        &[
            "FixedInterval",
            "fixed_interval",
            "ConstantBuilder",
            "constant",
            "constant_backoff",
            "fixed",
        ],
        "a name from tokio-retry or backon",
        Here::Explain,
        "the same delay each time is `backoff = \"fixed\"` with `delay = \"1s\"`",
    ),
    k(
        &["without_max_delay"],
        "backon's name",
        Here::Explain,
        "`max_delay` is 20 s unless set: raise it (`max_delay = \"10m\"`)",
    ),
    k(
        &["from_millis"],
        "tokio-retry's name",
        Here::Key("delay"),
        "the first delay between attempts (`backoff` and `multiplier` make it grow)",
    ),
    // gRPC's service config (gRFC A6), Envoy's retry policy, the AWS SDKs, Hystrix.
    k(
        &[
            "initialBackoff",
            "initial_backoff",
            "base_interval",
            "baseInterval",
        ],
        "gRPC's service config (gRFC A6), the AWS SDKs' or Envoy's name",
        Here::Key("delay"),
        "the first delay between attempts (`backoff` and `multiplier` make it grow)",
    ),
    k(
        &[
            "retryableStatusCodes",
            "retriable_status_codes",
            "retryable_status_codes",
            "nonFatalStatusCodes",
            "retryOnStatus",
        ],
        "gRPC's service config (gRFC A6) or Envoy's name",
        Here::Key("retry_on"),
        "the errors to retry, as patterns of your error type (for `tonic::Status`, a predicate \
         on its code: `retry_if = |s| s.code() == tonic::Code::Unavailable`)",
    ),
    k(
        &[
            "perAttemptRecvTimeout",
            "per_try_timeout",
            "perTryTimeout",
            "operation_attempt_timeout",
            "apiCallAttemptTimeout",
            "executionTimeoutInMilliseconds",
            "executionIsolationThreadTimeoutInMilliseconds",
        ],
        "a name from gRPC's service config, Envoy, the AWS SDKs or Hystrix",
        Here::Key("timeout"),
        "the limit of one attempt",
    ),
    k(
        &["operation_timeout", "apiCallTimeout", "api_call_timeout"],
        "the AWS SDKs' name",
        Here::Key("max_elapsed"),
        "the limit of all attempts and sleeps together",
    ),
    k(
        &[
            "rate_limited_retry_back_off",
            "throttling_backoff",
            "throttle_delay",
        ],
        "a name from Envoy or the AWS SDKs",
        Here::Key("throttling_delay"),
        "the first delay after an error that asked to slow down (a 429, `RESOURCE_EXHAUSTED`)",
    ),
    k(
        &["retry_mode", "retryMode", "aws_retry_mode"],
        "the AWS SDKs' name",
        Here::Explain,
        "the AWS SDKs' standard mode is a preset: build `reattempt::Preset::Aws2026.policy()` (or \
         `AwsStandard`) once and give `policy = POLICY`, its `budget()` with `budget = BUDGET`; \
         adaptive mode's client-side rate is `throttle = …`",
    ),
    k(
        &["retry_strategy", "retryStrategy", "retryer"],
        "a name from the AWS SDKs",
        Here::Key("policy"),
        "a `RetryPolicy` the call borrows, the whole schedule at run time",
    ),
    k(
        &["hedgingPolicy", "hedging_policy"],
        "gRPC's service config (gRFC A6)",
        Here::Explain,
        "hedging is `hedge_after = \"50ms\"` (when the next copy starts) with `idempotent = true`; \
         `max_attempts` counts every copy",
    ),
    k(
        &["retryThrottling", "retry_throttling"],
        "gRPC's service config (gRFC A6)",
        Here::Explain,
        "a shared limit on retries is a `reattempt::RetryBudget`, built once \
         (`RetryBudget::builder().max_tokens(10)`) and given with `budget = BUDGET`",
    ),
    // Python's `retrying` and `backoff`, Go's cenkalti/backoff, retry-go and
    // go-retryablehttp, Rust's tryhard and reqwest-retry, Guava-retrying, Arrow's `Schedule`.
    k(
        &[
            "stop_max_attempt_number",
            "total_max_attempts",
            "until_attempts",
        ],
        "a name from Python's `retrying` or botocore",
        Here::Key("max_attempts"),
        MAX_ATTEMPTS_WHY,
    ),
    k(
        &["RetryMax", "max_n_retries", "recurs"],
        "a name from go-retryablehttp, reqwest-retry or Arrow",
        Here::Retries,
        "",
    ),
    k(
        &[
            "stop_max_delay",
            "max_time",
            "MaxElapsed",
            "overall_timeout",
            "global_timeout",
        ],
        "a name from Python's `retrying` or `backoff`, or a common name",
        Here::Key("max_elapsed"),
        "the limit of all attempts and sleeps together",
    ),
    k(
        &[
            "RetryWaitMin",
            "wait_exponential_multiplier",
            "wait_incrementing_start",
            "spaced",
        ],
        "a name from go-retryablehttp, Python's `retrying` or Arrow",
        Here::Key("delay"),
        "the first delay between attempts (`backoff` and `multiplier` make it grow)",
    ),
    k(
        &["RetryWaitMax", "wait_exponential_max"],
        "a name from go-retryablehttp or Python's `retrying`",
        Here::Key("max_delay"),
        "the ceiling of one delay, before jitter",
    ),
    k(
        &[
            "retry_on_exception",
            "CheckRetry",
            "retryIfException",
            "retryIfExceptionOfType",
        ],
        "a name from Python's `retrying`, go-retryablehttp or Guava-retrying",
        Here::Key("retry_if"),
        "a predicate on the error, `Fn(&E) -> bool`",
    ),
    k(
        &["retryIfResult"],
        "Guava-retrying's name",
        Here::Key("retry_if_ok"),
        "a predicate on the `Ok` value, `Fn(&T) -> bool`",
    ),
    k(
        &["giveup", "give_up"],
        "the Python `backoff` library's name",
        Here::Explain,
        "the errors not to retry are `no_retry_on = [E::Fatal]` (patterns) or \
         `retry_if = |e| !fatal(e)` (a predicate)",
    ),
    k(
        &["on_giveup", "ErrorHandler", "on_exhausted"],
        "a name from Python's `backoff` or go-retryablehttp",
        Here::Key("recover"),
        "the path of a #[recover] fn, called with the final error",
    ),
    k(
        &["onRetryAsync", "on_retry_async"],
        "Polly's name",
        Here::Key("on_retry"),
        "a hook called before each sleep, `Fn(&E, &reattempt::RetryContext, Duration)`",
    ),
    k(
        &[
            "wait_random_min",
            "wait_random_max",
            "wait_jitter_max",
            "MaxJitter",
            "jitter_ms",
        ],
        "a name from Python's `retrying` or retry-go",
        Here::Explain,
        "jitter is a kind or a factor, not an amount: `jitter = \"full\"` (the default, 0 to the \
         delay), `\"equal\"` (half to all of it), or a factor f such as `jitter = 0.2` (1 ± f)",
    ),
    k(
        &["DelayType", "backoffStrategy", "backoff_strategy"],
        "a name from retry-go or other backoff libraries",
        Here::Key("backoff"),
        "the shape of the delays, `\"fixed\"`, `\"linear\"` or `\"exponential\"`",
    ),
    k(
        &[
            "custom_backoff",
            "sleepDurations",
            "sleep_durations",
            "delays",
        ],
        "a name from tryhard or Polly",
        Here::Key("delay_for"),
        "a function choosing the delay from the error, `Fn(&E, u32, Duration) -> Option<Duration>` \
         (the attempt that failed, the schedule's delay; `None` keeps it)",
    ),
    k(
        &["retry_bounds"],
        "reqwest-retry's name",
        Here::Explain,
        "the bounds of the delays are `delay = \"100ms\"` (the first) and `max_delay = \"10s\"` (the ceiling)",
    ),
    k(
        &["request_timeout", "call_timeout", "try_timeout"],
        "a common name",
        Here::Key("timeout"),
        "the limit of one attempt (`max_elapsed` limits the whole call)",
    ),
    // failsafe-go, cockatiel, p-retry, axios-retry, urllib3's `Retry`, Finagle, Envoy and .NET's
    // HTTP client resilience, beyond the names above (a builder's `With…` prefix is dropped).
    k(
        &[
            "jitter_factor",
            "jitterFactor",
            "jitter_type",
            "jitterType",
            "jitter_mode",
            "jitter_strategy",
            "backoff_jitter",
        ],
        "a name from failsafe-go, urllib3 or other backoff libraries",
        Here::Key("jitter"),
        "a kind (`\"none\"`, `\"full\"`, `\"equal\"`, `\"decorrelated\"`) or a factor f in (0, 1] \
         (each delay times 1 ± f)",
    ),
    k(
        &["exponent"],
        "cockatiel's name",
        Here::Key("multiplier"),
        "the growth factor of exponential backoff",
    ),
    k(
        &["minTimeout", "min_timeout", "backoff_factor"],
        "a name from p-retry or urllib3",
        Here::Key("delay"),
        "the first delay between attempts (`backoff` and `multiplier` make it grow)",
    ),
    k(
        &["maxTimeout", "max_timeout", "backoff_max"],
        "a name from p-retry or urllib3",
        Here::Key("max_delay"),
        "the ceiling of one delay, before jitter",
    ),
    k(
        &["maxRetryTime", "max_retry_time", "TotalRequestTimeout"],
        "a name from p-retry, .NET's HTTP client resilience or failsafe-go",
        Here::Key("max_elapsed"),
        "the limit of all attempts and sleeps together",
    ),
    k(
        &[
            "retryCondition",
            "shouldRetry",
            "should_retry",
            "handleAll",
            "handleType",
            "handleWhen",
            "HandleErrors",
            "HandleErrorTypes",
            "classifier",
            "responseClassifier",
            "retryable",
            "isRetryable",
        ],
        "a name from axios-retry, p-retry, cockatiel, failsafe-go or Finagle",
        Here::Key("retry_if"),
        "a predicate on the error, `Fn(&E) -> bool`",
    ),
    k(
        &[
            "handleResultType",
            "handleWhenResult",
            "HandleResult",
            "validateResponse",
        ],
        "a name from cockatiel, failsafe-go or axios-retry",
        Here::Key("retry_if_ok"),
        "a predicate on the `Ok` value, `Fn(&T) -> bool`",
    ),
    k(
        &["AbortOnErrors", "AbortOnResult"],
        "failsafe-go's name",
        Here::Key("no_retry_on"),
        "the errors never to retry, as patterns of your error type",
    ),
    k(
        &["onMaxRetryTimesExceeded"],
        "axios-retry's name",
        Here::Key("recover"),
        "the path of a #[recover] fn, called with the final error",
    ),
    k(
        &["OnRetryScheduled", "RequestLogHook", "onFailedAttemptAsync"],
        "a name from failsafe-go, go-retryablehttp or p-retry",
        Here::Key("on_retry"),
        "a hook called before each sleep, `Fn(&E, &reattempt::RetryContext, Duration)`",
    ),
    k(&["total"], "urllib3's `Retry(total=…)`", Here::Retries, ""),
    k(
        &["connect", "read", "other", "status"],
        "urllib3's `Retry`, a count of retries for one kind of failure",
        Here::Explain,
        "one count covers every failure, `max_attempts` (the first attempt included); which \
         errors are retried is `retry_on = [E::Connect]` (patterns) or `retry_if = |e| …`",
    ),
    k(
        &[
            "status_forcelist",
            "retry_on_status_codes",
            "statusCodes",
            "retryStatusCodes",
        ],
        "a name from urllib3 or other HTTP clients",
        Here::Explain,
        "the HTTP statuses to retry are a predicate: `retry_if = reattempt::transient` over an \
         `http::StatusCode` error (429, 502, 503, 504), or the tower `.http()` layer",
    ),
    k(
        &[
            "allowed_methods",
            "method_whitelist",
            "DisableForUnsafeHttpMethods",
            "DisableFor",
            "retryNonIdempotent",
        ],
        "a name from urllib3 or .NET's HTTP client resilience",
        Here::Explain,
        "the attribute sees a function, not a method: whether a call is safe to repeat is \
         `idempotent = true` or `false` on it (the tower `.http()` layer reads the method itself)",
    ),
    k(
        &[
            "respect_retry_after_header",
            "ShouldRetryAfterHeader",
            "retry_after_header",
            "honorRetryAfter",
        ],
        "a name from urllib3 or .NET's HTTP client resilience",
        Here::Key("retry_after"),
        "a fn reading the server's hint from the error, `Fn(&E) -> Option<Duration>`",
    ),
    k(
        &["raise_on_status", "raise_on_redirect", "ReturnLastFailure"],
        "a name from urllib3 or failsafe-go",
        Here::Explain,
        "the call returns the last error once its attempts are spent, always; to turn it into \
         another, use `recover = fallback`",
    ),
    k(
        &["shouldResetTimeout", "should_reset_timeout"],
        "axios-retry's name",
        Here::Explain,
        "`timeout` limits each attempt, restarting with each one; `max_elapsed` limits the whole \
         call",
    ),
    k(
        &["requeues", "requeue", "max_requeues"],
        "Finagle's name",
        Here::Explain,
        "every attempt counts in `max_attempts`, one that never reached a server (Finagle's \
         requeue) included, and a refused connection is retried as any error `retry_on` or \
         `retry_if` accepts",
    ),
    k(
        &[
            "retry_host_predicate",
            "retryHostPredicate",
            "host_selection_retry_max_attempts",
            "retry_priority",
            "retryPriority",
        ],
        "Envoy's name, which picks another host for a retry",
        Here::Explain,
        "a retry calls the function again, and which host it reaches is the client's \
         choice (a load-balanced tower service or tonic channel), not the retry's",
    ),
    k(
        &["label", "id", "metric_name"],
        "a common name",
        Here::Key("name"),
        "the label in traces and metrics, a string",
    ),
];
