//! What a call reports: `tracing` events and, with the `metrics` feature, counters.
//!
//! Events, under the target `reattempt`: one per retry (`DEBUG`; `RUST_LOG=reattempt=debug` shows
//! them) and one per give-up (`WARN` after retrying, since the caller is about to see an error that
//! retries did not cure; `DEBUG` when no retry was made: a non-retryable error, a rejection by an
//! open breaker, a budget that could not pay for the first retry); a breaker's transitions are
//! `INFO`.
//!
//! Metrics (feature `metrics`, through the `metrics` facade, each labelled `name`):
//!
//! | metric | kind | meaning |
//! |---|---|---|
//! | `reattempt_calls_total` | counter, label `outcome` | calls `successful_without_retry`, `successful_with_retry`, `failed_without_retry`, `failed_with_retry` (Resilience4j's four; an `Ok` that `retry_if_ok` rejected, returned when no retry is left, is failed) |
//! | `reattempt_attempts_total` | counter | attempts made |
//! | `reattempt_breaker_rejections_total` | counter | attempts a circuit breaker rejected |
//! | `reattempt_budget_refusals_total` | counter | retries the budget could not pay for |
//! | `reattempt_retry_delay_seconds` | histogram | the sleeps before retries |

use std::fmt::Debug;
use std::time::Duration;

use crate::engine::GiveUpReason;

/// One attempt ended (whatever its outcome).
#[inline]
pub(crate) fn attempt_made(name: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("reattempt_attempts_total", "name" => name).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = name;
}

/// The call is over: it returns an `Ok` (`succeeded`) or an `Err`, after `attempts` attempts.
#[inline]
pub(crate) fn call_finished(name: &'static str, attempts: u32, succeeded: bool) {
    #[cfg(feature = "metrics")]
    {
        let outcome = match (succeeded, attempts > 1) {
            (true, false) => "successful_without_retry",
            (true, true) => "successful_with_retry",
            (false, false) => "failed_without_retry",
            (false, true) => "failed_with_retry",
        };
        metrics::counter!("reattempt_calls_total", "name" => name, "outcome" => outcome)
            .increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, attempts, succeeded);
}

fn delay_metric(name: &'static str, delay: Duration) {
    #[cfg(feature = "metrics")]
    metrics::histogram!("reattempt_retry_delay_seconds", "name" => name)
        .record(delay.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (name, delay);
}

fn give_up_metric(name: &'static str, reason: GiveUpReason) {
    #[cfg(feature = "metrics")]
    match reason {
        GiveUpReason::BreakerOpen => {
            metrics::counter!("reattempt_breaker_rejections_total", "name" => name).increment(1);
        }
        GiveUpReason::BudgetExhausted => {
            metrics::counter!("reattempt_budget_refusals_total", "name" => name).increment(1);
        }
        _ => {}
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, reason);
}

pub(crate) fn retrying(name: &'static str, attempt: u32, delay: Duration, error: &dyn Debug) {
    delay_metric(name, delay);
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        error = ?error,
        "attempt failed; retrying"
    );
}

pub(crate) fn retrying_ok(name: &'static str, attempt: u32, delay: Duration) {
    delay_metric(name, delay);
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        "attempt returned a value to retry; retrying"
    );
}

pub(crate) fn giving_up(
    name: &'static str,
    attempt: u32,
    reason: GiveUpReason,
    error: Option<&dyn Debug>,
) {
    give_up_metric(name, reason);
    // A give-up is never a success, even with an `Ok` that `retry_if_ok` rejected.
    call_finished(name, attempt, false);
    // WARN means "retries were made and did not cure it". A rejection by an open breaker, or a
    // budget refusal before any retry, is routine while a dependency is down: DEBUG, or every
    // call would warn during an outage.
    let retried = attempt > 1 && reason != GiveUpReason::BreakerOpen;
    match (reason, error) {
        (GiveUpReason::NotRetryable, Some(error)) => tracing::debug!(
            target: "reattempt", name, attempt, %reason, error = ?error, "not retrying"
        ),
        (_, Some(error)) if retried => tracing::warn!(
            target: "reattempt", name, attempt, %reason, error = ?error, "giving up"
        ),
        (_, Some(error)) => tracing::debug!(
            target: "reattempt", name, attempt, %reason, error = ?error, "not retrying"
        ),
        (_, None) => tracing::debug!(
            target: "reattempt", name, attempt, %reason, "giving up; returning the last value"
        ),
    }
}

pub(crate) fn breaker_transition(name: &str, from: crate::BreakerState, to: crate::BreakerState) {
    tracing::info!(target: "reattempt", breaker = name, %from, %to, "circuit breaker {to}");
}
