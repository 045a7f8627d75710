//! The words of the messages: an example value of each key, and what an expression key takes.

/// An example value of each key, for messages.
pub(super) fn example(key: &str) -> &'static str {
    match key {
        "max_attempts" => "3",
        "delay" => "\"200ms\"",
        "backoff" => "\"exponential\"",
        "multiplier" => "2",
        "max_delay" => "\"10s\"",
        "throttling_delay" => "\"2s\"",
        "jitter" => "\"full\"",
        "timeout" => "\"1s\"",
        "max_elapsed" | "idle_timeout" => "\"30s\"",
        "log_error" => "\"debug\"",
        "hedge_after" => "\"50ms\"",
        "retry_on" => "[MyError::Unavailable]",
        "no_retry_on" => "[MyError::Declined]",
        "retry_if" => "reattempt::transient",
        "retry_if_ok" => "|v| v.is_pending()",
        "retry_after" => "retry_after_hint",
        "delay_for" => "|e, attempt, computed| e.wait().or(Some(computed))",
        "on_retry" => "log_retry",
        "recover" => "fallback",
        "name" => "\"charge\"",
        "crate" => "\"::reattempt\"",
        "circuit_breaker" => "BREAKER",
        "budget" => "BUDGET",
        "one_layer" | "idempotent" => "true",
        "throttle" => "THROTTLE",
        "bulkhead" => "BULKHEAD",
        "timeout_into" => "|elapsed| Status::deadline_exceeded(elapsed.to_string())",
        "breaker_open_into" => "|open| Status::unavailable(open.to_string())",
        "throttled_into" => "|shed| Status::unavailable(shed.to_string())",
        "bulkhead_full_into" => "|full| Status::resource_exhausted(full.to_string())",
        "resume" => "|after, event: &Event| *after = Some(event.seq)",
        "checkpoint" => "after",
        "progress_resets" => "false",
        _ => "POLICY",
    }
}

/// What an expression-valued key's value must give, for messages.
pub(super) fn expr_kind(key: &str) -> Option<&'static str> {
    Some(match key {
        "retry_if" => "a path or closure, `Fn(&E) -> bool`",
        "retry_if_ok" => "a path or closure, `Fn(&T) -> bool`",
        "retry_after" => "a path or closure, `Fn(&E) -> Option<Duration>`",
        "delay_for" => "a path or closure, `Fn(&E, u32, Duration) -> Option<Duration>`",
        "on_retry" => "a path or closure, `Fn(&E, &reattempt::RetryContext, Duration)`",
        "circuit_breaker" => {
            "a `CircuitBreaker` the call borrows (a `static`, `self.breaker`, an `Arc<CircuitBreaker>`)"
        }
        "budget" => {
            "a `RetryBudget` the call borrows (a `static`, `self.budget`, an `Arc<RetryBudget>`)"
        }
        "throttle" => {
            "an `AdaptiveThrottle` the call borrows (a `static`, `self.throttle`, an `Arc<AdaptiveThrottle>`)"
        }
        "bulkhead" => {
            "a `Bulkhead` the call borrows (a `static`, `self.bulkhead`, an `Arc<Bulkhead>`)"
        }
        "policy" => "a `RetryPolicy` the call borrows (a `static`, a `LazyLock`, `self.policy`)",
        "recover" => "the path of a #[recover] fn (`fallback`, `Self::fallback`)",
        "timeout_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::Elapsed) -> E`"
        }
        "breaker_open_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::BreakerOpen) -> E`"
        }
        "throttled_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::Throttled) -> E`"
        }
        "bulkhead_full_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::BulkheadFull) -> E`"
        }
        "resume" => {
            "a closure `|after, item: &T| …` naming the argument the stream resumes from, or a path `fn(&mut C, &T)` with `checkpoint = after`"
        }
        "checkpoint" => {
            "the name of the argument the stream resumes from, as in `checkpoint = after`"
        }
        _ => return None,
    })
}
