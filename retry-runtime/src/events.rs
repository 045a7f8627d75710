//! Tracing events: one per retry and one per give-up, under the target `reattempt`.
//!
//! Retries are `DEBUG` (`RUST_LOG=reattempt=debug` shows them); giving up after retrying is
//! `WARN`, since the caller is about to see an error that retries did not cure; stopping on a
//! non-retryable error is `DEBUG`.

use std::fmt::Debug;
use std::time::Duration;

use crate::engine::GiveUpReason;

pub(crate) fn retrying(name: &str, attempt: u32, delay: Duration, error: &dyn Debug) {
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        error = ?error,
        "attempt failed; retrying"
    );
}

pub(crate) fn retrying_ok(name: &str, attempt: u32, delay: Duration) {
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        "attempt returned a value to retry; retrying"
    );
}

pub(crate) fn giving_up(name: &str, attempt: u32, reason: GiveUpReason, error: Option<&dyn Debug>) {
    match (reason, error) {
        (GiveUpReason::NotRetryable, Some(error)) => tracing::debug!(
            target: "reattempt", name, attempt, %reason, error = ?error, "not retrying"
        ),
        (_, Some(error)) => tracing::warn!(
            target: "reattempt", name, attempt, %reason, error = ?error, "giving up"
        ),
        (_, None) => tracing::debug!(
            target: "reattempt", name, attempt, %reason, "giving up; returning the last value"
        ),
    }
}

pub(crate) fn breaker_transition(name: &str, from: crate::BreakerState, to: crate::BreakerState) {
    tracing::info!(target: "reattempt", breaker = name, %from, %to, "circuit breaker {to}");
}
