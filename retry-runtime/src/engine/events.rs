//! What a call reports: `tracing` events and, with the `metrics` feature, counters.
//!
//! Events, under the target `reattempt`: one per retry (`DEBUG`; `RUST_LOG=reattempt=debug` shows
//! them) and one per give-up (`WARN` after retrying, since the caller is about to see an error that
//! retries did not cure; `DEBUG` when no retry was made: a non-retryable error, a rejection by an
//! open breaker, a budget that could not pay for the first retry); a breaker's transitions are
//! `INFO`.
//!
//! Their fields: `name` (the call's), `attempt` (1-based: the attempt that failed, or for a
//! rejection by an open breaker the attempt that was not made), `delay` (a retry's sleep, exact:
//! `250µs`, `1.5s`), `class` (a retry's: the failure's [`ErrorClass`], `transient`, `throttling`
//! or `timeout`), `reason` (a give-up's), and the error as the policy's
//! [`log_error`](crate::RetryPolicyBuilder::log_error) says: by default only `error_type`, the
//! name of its type (`reqwest::error::Error`), since an error's `Debug` can carry a secret (a
//! `reqwest::Error` holds its URL, query string and API key included); with [`LogError::Debug`]
//! also `error`, its `Debug` text. To log more of an error safely, log it yourself from `on_retry`
//! and `#[recover]`, which receive it.
//!
//! Metrics (feature `metrics`, through the `metrics` facade, each labelled `name`):
//!
//! | metric | kind | meaning |
//! |---|---|---|
//! | `reattempt.calls` | counter, label `outcome` | calls `successful_without_retry`, `successful_with_retry`, `failed_without_retry`, `failed_with_retry` (Resilience4j's four; an `Ok` that `retry_if_ok` rejected, returned when no retry is left, is failed) |
//! | `reattempt.attempts` | counter | attempts made |
//! | `reattempt.breaker.rejections` | counter | attempts a circuit breaker rejected |
//! | `reattempt.budget.refusals` | counter | retries the budget could not pay for |
//! | `reattempt.throttle.rejections` | counter | attempts the adaptive throttle shed |
//! | `reattempt.bulkhead.rejections` | counter | calls a bulkhead turned away |
//! | `reattempt.one_layer.deferrals` | counter | calls that left a retry to an enclosing call (`one_layer`) |
//! | `reattempt.faults.injected` | counter, label `kind` | faults injected into attempts (feature `testing`, `testing::FaultInjection`): `error` (an attempt not made, failed) or `latency` (an attempt made late) |
//! | `reattempt.retry.delay` | histogram, label `class` | the sleeps before retries, by the class of the failure retried (`transient`, `throttling`, `timeout`) |

use std::cell::Cell;
use std::fmt::{Debug, Display};
use std::time::Duration;

use crate::engine::give_up::GiveUpReason;
#[cfg(feature = "metrics")]
use crate::engine::meters;
use crate::{ErrorClass, LogError};

/// An error as an event shows it: the fields that its policy's [`LogError`] allows.
#[derive(Clone, Copy)]
pub(crate) struct Logged<'a> {
    type_name: Option<&'static str>,
    debug: Option<&'a dyn Debug>,
}

impl<'a> Logged<'a> {
    #[inline]
    pub(crate) fn new<E: Debug>(error: &'a E, log: LogError) -> Self {
        Logged {
            type_name: (log != LogError::None).then(std::any::type_name::<E>),
            debug: (log == LogError::Debug).then_some(error as &dyn Debug),
        }
    }

    fn debug(&self) -> Option<tracing::field::DebugValue<&'a dyn Debug>> {
        self.debug.map(tracing::field::debug)
    }
}

/// The name a call's events carry: a `&'static str`, or a function that gives it, called only
/// when an event names the call (so that a name worked out at run time costs nothing on the
/// success path unless the `metrics` feature counts it).
///
/// ```
/// use retry_runtime::__private::CallName;
///
/// fn label(name: impl CallName) -> &'static str {
///     name.name()
/// }
/// assert_eq!(label("fetch"), "fetch");
/// assert_eq!(label(|| "fetch"), "fetch");
/// ```
pub trait CallName: Copy {
    /// The name.
    fn name(self) -> &'static str;
}

impl CallName for &'static str {
    #[inline]
    fn name(self) -> &'static str {
        self
    }
}

impl<F: Fn() -> &'static str + Copy> CallName for F {
    #[inline]
    fn name(self) -> &'static str {
        self()
    }
}

/// One attempt ended (whatever its outcome).
#[inline]
pub(crate) fn attempt_made(name: impl CallName) {
    #[cfg(feature = "metrics")]
    {
        meters::describe();
        metrics::counter!(meters::ATTEMPTS, meters::NAME => name.name()).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = name;
}

/// The call is over: it returns an `Ok` (`succeeded`) or an `Err`, after `attempts` attempts.
#[inline]
pub(crate) fn call_finished(name: impl CallName, attempts: u32, succeeded: bool) {
    #[cfg(feature = "metrics")]
    {
        meters::describe();
        let outcome = match (succeeded, attempts > 1) {
            (true, false) => "successful_without_retry",
            (true, true) => "successful_with_retry",
            (false, false) => "failed_without_retry",
            (false, true) => "failed_with_retry",
        };
        metrics::counter!(meters::CALLS, meters::NAME => name.name(), meters::OUTCOME => outcome)
            .increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, attempts, succeeded);
}

fn delay_metric(name: &'static str, delay: Duration, class: ErrorClass) {
    #[cfg(feature = "metrics")]
    {
        meters::describe();
        metrics::histogram!(meters::RETRY_DELAY, meters::NAME => name, meters::CLASS => class.as_str())
            .record(delay.as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, delay, class);
}

fn give_up_metric(name: &'static str, reason: GiveUpReason) {
    #[cfg(feature = "metrics")]
    meters::describe();
    #[cfg(feature = "metrics")]
    match reason {
        GiveUpReason::BreakerOpen => {
            metrics::counter!(meters::BREAKER_REJECTIONS, meters::NAME => name).increment(1);
        }
        GiveUpReason::BudgetExhausted => {
            metrics::counter!(meters::BUDGET_REFUSALS, meters::NAME => name).increment(1);
        }
        GiveUpReason::Throttled => {
            metrics::counter!(meters::THROTTLE_REJECTIONS, meters::NAME => name).increment(1);
        }
        GiveUpReason::BulkheadFull => {
            metrics::counter!(meters::BULKHEAD_REJECTIONS, meters::NAME => name).increment(1);
        }
        GiveUpReason::OuterRetries => {
            metrics::counter!(meters::ONE_LAYER_DEFERRALS, meters::NAME => name).increment(1);
        }
        GiveUpReason::UnknownOutcome => {
            metrics::counter!(meters::UNKNOWN_OUTCOME_REFUSALS, meters::NAME => name).increment(1);
        }
        _ => {}
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, reason);
}

pub(crate) fn retrying(
    name: &'static str,
    attempt: u32,
    delay: Duration,
    class: ErrorClass,
    effect: crate::Effect,
    error: Logged<'_>,
) {
    delay_metric(name, delay, class);
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        delay = ?delay,
        class = class.as_str(),
        effect = effect.as_str(),
        error_type = error.type_name,
        error = error.debug(),
        "attempt failed; retrying"
    );
}

thread_local! {
    /// A resumed stream that was re-opened before is deciding (see [`in_resumed_stream`]).
    static RESUMED_STREAM: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, a decision of a stream, telling the give-up events in it whether the stream was
/// `resumed` before: its attempts are numbered within its schedule, which progress restarts
/// (`Engine::restart_schedule`), so a give-up at attempt 1 of a stream re-opened before ended a
/// retried call all the same (`failed_with_retry`, a `WARN`).
pub(crate) fn in_resumed_stream<R>(resumed: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            RESUMED_STREAM.set(self.0);
        }
    }
    let _restore = Restore(RESUMED_STREAM.replace(resumed));
    f()
}

/// The attempts a give-up reports: at least two in a stream that was re-opened before.
fn counted(attempts: u32) -> u32 {
    if RESUMED_STREAM.get() {
        attempts.max(2)
    } else {
        attempts
    }
}

/// A resumed stream re-opened (its `resumes`-th time), as attempt `attempt` of its schedule: a
/// `DEBUG` event, and the counter `reattempt.stream.resumes`.
pub(crate) fn stream_resumed(name: &'static str, resumes: u32, attempt: u32) {
    #[cfg(feature = "metrics")]
    {
        meters::describe();
        metrics::counter!(meters::STREAM_RESUMES, meters::NAME => name).increment(1);
    }
    tracing::debug!(target: "reattempt", name, resumes, attempt, "stream resumed");
}

/// Fault injection made attempt `attempt` of the call into `kind` (counted when its outcome is
/// decided): a `DEBUG` event with `injected = true`, and the counter
/// `reattempt.faults.injected`.
#[cfg(feature = "testing")]
#[cold]
pub(crate) fn fault_injected(
    name: &'static str,
    attempt: u32,
    kind: crate::testing::InjectedFault,
) {
    #[cfg(feature = "metrics")]
    {
        meters::describe();
        metrics::counter!(meters::INJECTED_FAULTS, meters::NAME => name, meters::FAULT => kind.as_str())
            .increment(1);
    }
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        injected = true,
        kind = kind.as_str(),
        "fault injected into the attempt"
    );
}

/// A `#[retryable(policy = …)]` function whose attempts cannot overlap (`&mut self`, a `&mut`
/// argument, a blocking fn) was given a policy with `hedge_after`, which it ignores.
#[cold]
pub(crate) fn hedge_ignored(name: &'static str, hedge_after: crate::HedgeAfter) {
    tracing::warn!(
        target: "reattempt",
        name,
        hedge_after = %hedge_after,
        "the policy's hedge_after is ignored: this fn's attempts cannot overlap (it is blocking, \
         or takes &mut self, self or a &mut argument); its attempts run one after another"
    );
}

/// A long-polling policy's call gave up because its budget refused a retry, but could not wait
/// that retry's backoff before returning: it has no place to keep its outcome (a closure-API
/// call with a budget and no breaker or throttle). It returns at once.
#[cold]
pub(crate) fn long_polling_skipped(name: &'static str) {
    tracing::warn!(
        target: "reattempt",
        name,
        "the policy is long-polling, but this call returns at once instead of waiting the refused \
         retry's backoff: it keeps no outcome to return after the wait; add \
         .long_polling_wait() to the call (its future is then Send only if T and E are)"
    );
}

/// A gRPC attempt's stream was refused before the server's application saw it
/// (`REFUSED_STREAM`), and is sent again at once (gRFC A6's transparent retry, which is neither
/// an attempt of the policy nor a failure for the throttle).
#[cfg(feature = "tonic")]
#[cold]
pub(crate) fn transparent_retry(name: &'static str) {
    tracing::debug!(
        target: "reattempt",
        name,
        "the server refused the stream before processing it; sending it again at once"
    );
    #[cfg(feature = "metrics")]
    {
        meters::describe();
        metrics::counter!(meters::TRANSPARENT_RETRIES, meters::NAME => name).increment(1);
    }
}

/// A hedged call started attempt `attempt` alongside the ones in flight.
pub(crate) fn hedging(name: &'static str, attempt: u32) {
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        "no attempt answered within hedge_after; hedging"
    );
}

pub(crate) fn retrying_ok(name: &'static str, attempt: u32, delay: Duration, class: ErrorClass) {
    delay_metric(name, delay, class);
    tracing::debug!(
        target: "reattempt",
        name,
        attempt,
        delay = ?delay,
        class = class.as_str(),
        "attempt returned a value to retry; retrying"
    );
}

pub(crate) fn giving_up(
    name: &'static str,
    attempt: u32,
    reason: GiveUpReason,
    error: Option<Logged<'_>>,
) {
    give_up_metric(name, reason);
    #[cfg(feature = "spans")]
    crate::engine::spans::note_give_up(reason);
    let made = counted(attempt);
    // A give-up is never a success, even with an `Ok` that `retry_if_ok` rejected.
    call_finished(name, made, false);
    // WARN means "retries were made and did not cure it". A rejection by an open breaker, or a
    // budget refusal before any retry, is routine while a dependency is down: DEBUG, or every
    // call would warn during an outage.
    let retried = made > 1 && reason != GiveUpReason::BreakerOpen;
    // Leaving the retry to an enclosing call is the rule working, not a failure to report.
    let retried = retried && reason != GiveUpReason::OuterRetries;
    match (reason, error) {
        (GiveUpReason::NotRetryable, Some(error)) => tracing::debug!(
            target: "reattempt", name, attempt, %reason,
            error_type = error.type_name, error = error.debug(), "not retrying"
        ),
        (_, Some(error)) if retried => tracing::warn!(
            target: "reattempt", name, attempt, %reason,
            error_type = error.type_name, error = error.debug(), "giving up"
        ),
        (_, Some(error)) => tracing::debug!(
            target: "reattempt", name, attempt, %reason,
            error_type = error.type_name, error = error.debug(), "not retrying"
        ),
        (_, None) => tracing::debug!(
            target: "reattempt", name, attempt, %reason, "giving up; returning the last value"
        ),
    }
}

/// A guard (breaker, throttle, bulkhead: `reason`) rejected the attempt after the `made` ones:
/// the call ends with its error.
pub(crate) fn rejected(name: &'static str, made: u32, reason: GiveUpReason, error: Logged<'_>) {
    give_up_metric(name, reason);
    #[cfg(feature = "spans")]
    crate::engine::spans::note_give_up(reason);
    call_finished(name, counted(made), false);
    // Routine while a dependency is down: DEBUG, or every call would warn during an outage.
    tracing::debug!(
        target: "reattempt", name, attempt = made.saturating_add(1), %reason,
        error_type = error.type_name, error = error.debug(), "not retrying"
    );
}

/// A blocking `#[retryable]` fn sleeps on a runtime thread that nothing else can take over.
#[cold]
pub(crate) fn blocking_sleep_on_current_thread(delay: Duration) {
    tracing::warn!(
        target: "reattempt",
        delay = ?delay,
        "a blocking retrying fn sleeps on a current-thread tokio runtime, which runs no other task \
         meanwhile; call it from tokio::task::spawn_blocking, or make it async"
    );
}

// The states come as anything displayed (the breaker's `BreakerState`), so that the events, below
// the guards, know nothing of them.
pub(crate) fn breaker_transition<S: Display + Copy>(name: &str, from: S, to: S) {
    tracing::info!(target: "reattempt", breaker = name, %from, %to, "circuit breaker {to}");
}
