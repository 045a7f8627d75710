//! A trace of the retrying calls in a scope: the runtime's events (target `reattempt`),
//! captured by a subscriber of their own for the scope, read back as retries, delays and
//! give-ups.

use std::fmt;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::instrument::WithSubscriber;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Metadata, Subscriber};

/// One event of the runtime, as it was emitted: its message and fields (values as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Its level (`DEBUG` for a retry, `WARN` for a give-up after retries…).
    pub level: tracing::Level,
    /// Its message ("attempt failed; retrying", "giving up", "not retrying", …).
    pub message: String,
    /// Its other fields, in order: `name`, `attempt`, `delay`, `class`, `reason`, `error`, …
    pub fields: Vec<(String, String)>,
}

impl TraceEvent {
    /// The value of field `name`, if the event has it.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::testing::trace;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let (_, trace) = trace(policy.retry(|| async { Err::<(), _>("busy") }).without_timeout().name("lookup")).await;
    ///     assert_eq!(trace.events()[0].field("name"), Some("lookup"));
    /// }
    /// ```
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A retry the trace saw: the attempt that failed, the sleep before the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// The call's name (`name = "…"`, the fn's path by default).
    pub name: String,
    /// The attempt that failed (1 for the first).
    pub attempt: u32,
    /// The sleep before the next attempt (the server's hint, if it set it).
    pub delay: Duration,
    /// The failure's class: `transient`, `throttling` or `timeout`.
    pub class: String,
    /// The error's type, unless the policy's `log_error` is `none` (and `None` for a retried
    /// `Ok` value).
    pub error_type: Option<String>,
    /// The error as `Debug` writes it, when the policy's `log_error` is `debug` (errors are not
    /// logged by default: they may hold what a log must not).
    pub error: Option<String>,
}

/// A call's end without success, as the trace saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GiveUp {
    /// The call's name.
    pub name: String,
    /// The last attempt (made, or turned away).
    pub attempt: u32,
    /// Why ([`GiveUpReason`](crate::GiveUpReason)'s text: "attempts exhausted", "not
    /// retryable", "circuit breaker open", …).
    pub reason: String,
    /// The error's type, if the call ended with one (unless `log_error` is `none`).
    pub error_type: Option<String>,
    /// The error as `Debug` writes it, with `log_error = debug`.
    pub error: Option<String>,
}

/// The runtime's events in a scope ([`trace`], [`trace_blocking`]), read back as what the calls
/// did: their retries (attempt, delay, class, error), the hedges they started, and how they gave
/// up (the guards' rejections among them). A call that succeeded at once leaves no event.
///
/// Events of tasks the scope spawns are not in it (each task has its own scope): trace inside
/// the task.
#[derive(Clone, Default)]
pub struct Trace {
    events: Arc<Mutex<Vec<TraceEvent>>>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.events().iter()).finish()
    }
}

impl Trace {
    /// Every event, in order.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::testing::trace;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(1).build().unwrap();
    ///     let (_, trace) = trace(policy.retry(|| async { Ok::<_, ()>(1) }).without_timeout()).await;
    ///     assert!(trace.events().is_empty(), "a first-try success says nothing");
    /// }
    /// ```
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The retries, in order.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{Jitter, LogError, RetryPolicy};
    ///     use reattempt::testing::{Script, trace};
    ///
    ///     let script: Script<u32, &str> = Script::new().err("busy").err("busy").ok(7);
    ///     let policy = RetryPolicy::builder()
    ///         .max_attempts(3)
    ///         .delay(Duration::from_millis(100))
    ///         .jitter(Jitter::None)
    ///         .log_error(LogError::Debug) // the errors' text in the events (default: their type)
    ///         .build()
    ///         .unwrap();
    ///     let (answer, trace) = trace(policy.retry(|| script.next()).without_timeout()).await;
    ///     assert_eq!(answer, Ok(7));
    ///     let retries = trace.retries();
    ///     assert_eq!(retries.len(), 2);
    ///     assert_eq!(retries[0].attempt, 1);
    ///     assert_eq!(retries[0].error_type.as_deref(), Some("&str"));
    ///     assert_eq!(retries[0].error.as_deref(), Some("\"busy\""));
    ///     assert_eq!(trace.delays(), [Duration::from_millis(100), Duration::from_millis(200)]);
    /// }
    /// ```
    pub fn retries(&self) -> Vec<Retry> {
        self.events()
            .iter()
            .filter(|e| e.message.ends_with("; retrying"))
            .map(|e| Retry {
                name: e.field("name").unwrap_or_default().to_owned(),
                attempt: number(e.field("attempt")),
                delay: e
                    .field("delay")
                    .and_then(parse_debug_duration)
                    .unwrap_or_default(),
                class: e.field("class").unwrap_or_default().to_owned(),
                error_type: e.field("error_type").map(str::to_owned),
                error: e.field("error").map(str::to_owned),
            })
            .collect()
    }

    /// The sleeps between attempts, in order.
    ///
    /// ```
    /// use reattempt::testing::Trace;
    ///
    /// assert!(Trace::default().delays().is_empty());
    /// ```
    pub fn delays(&self) -> Vec<Duration> {
        self.retries().into_iter().map(|r| r.delay).collect()
    }

    /// How the calls gave up (or were turned away), in order.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::testing::trace;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let (_, trace) = trace(policy.retry(|| async { Err::<(), _>("down") }).without_timeout()).await;
    ///     let give_ups = trace.give_ups();
    ///     assert_eq!(give_ups.len(), 1);
    ///     assert_eq!(give_ups[0].attempt, 2);
    ///     assert_eq!(give_ups[0].reason, "attempts exhausted");
    /// }
    /// ```
    pub fn give_ups(&self) -> Vec<GiveUp> {
        self.events()
            .iter()
            .filter(|e| e.field("reason").is_some())
            .map(|e| GiveUp {
                name: e.field("name").unwrap_or_default().to_owned(),
                attempt: number(e.field("attempt")),
                reason: e.field("reason").unwrap_or_default().to_owned(),
                error_type: e.field("error_type").map(str::to_owned),
                error: e.field("error").map(str::to_owned),
            })
            .collect()
    }

    /// The hedges started (the attempt each one is), in order.
    ///
    /// ```
    /// use reattempt::testing::Trace;
    ///
    /// assert!(Trace::default().hedges().is_empty());
    /// ```
    pub fn hedges(&self) -> Vec<u32> {
        self.events()
            .iter()
            .filter(|e| e.message.ends_with("hedging"))
            .map(|e| number(e.field("attempt")))
            .collect()
    }

    /// The events of the call named `name` only (`name = "…"`, or the fn's path).
    ///
    /// ```
    /// use reattempt::testing::Trace;
    ///
    /// assert!(Trace::default().of("charge").events().is_empty());
    /// ```
    #[must_use]
    pub fn of(&self, name: &str) -> Trace {
        let events = self
            .events()
            .into_iter()
            .filter(|e| e.field("name") == Some(name) || e.field("breaker") == Some(name))
            .collect();
        Trace {
            events: Arc::new(Mutex::new(events)),
        }
    }
}

fn number(text: Option<&str>) -> u32 {
    text.and_then(|t| t.parse().ok()).unwrap_or(0)
}

/// A `Duration` as its `Debug` writes it ("300ms", "1.5s", "20µs", "0ns"), exactly.
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let per_unit: u128 = match unit {
        "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "µs" => 1_000,
        "ns" => 1,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole: u128 = whole.parse().ok()?;
    let mut nanos = whole.checked_mul(per_unit)?;
    let mut scale = per_unit;
    for digit in fraction.bytes() {
        scale /= 10;
        nanos += u128::from(digit - b'0') * scale;
    }
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let sub = u32::try_from(nanos % 1_000_000_000).ok()?;
    Some(Duration::new(secs, sub))
}

/// Runs `future` with the runtime's events captured: its output, and the [`Trace`] of every
/// retrying call it made (in its own task). No subscriber to install: the trace has its own for
/// the future's polls, which passes every event and span on to the subscriber that was in
/// place (the program's, a test's), so its logs go on as before.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use std::time::Duration;
///     use reattempt::RetryPolicy;
///     use reattempt::testing::{Script, trace};
///
///     let script: Script<(), &str> = Script::new().then_always_err("unavailable");
///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
///     let (outcome, trace) = trace(policy.retry(|| script.next()).without_timeout().name("charge")).await;
///     assert_eq!(outcome, Err("unavailable"));
///     assert_eq!(trace.retries().len(), 2);
///     assert_eq!(trace.give_ups()[0].reason, "attempts exhausted");
/// }
/// ```
pub async fn trace<F: IntoFuture>(future: F) -> (F::Output, Trace) {
    let trace = Trace::default();
    let dispatch = Dispatch::new(Capture {
        events: Arc::clone(&trace.events),
        inner: tracing::dispatcher::get_default(Dispatch::clone),
    });
    let output = future.into_future().with_subscriber(dispatch).await;
    (output, trace)
}

/// As [`trace`], for blocking code: runs `body` with the runtime's events captured.
///
/// ```
/// use reattempt::testing::trace_blocking;
///
/// let (answer, trace) = trace_blocking(|| 6 * 7);
/// assert_eq!(answer, 42);
/// assert!(trace.events().is_empty());
/// ```
pub fn trace_blocking<R>(body: impl FnOnce() -> R) -> (R, Trace) {
    let trace = Trace::default();
    let dispatch = Dispatch::new(Capture {
        events: Arc::clone(&trace.events),
        inner: tracing::dispatcher::get_default(Dispatch::clone),
    });
    let output = tracing::dispatcher::with_default(&dispatch, body);
    (output, trace)
}

/// The subscriber of a trace: records the events of target `reattempt`, and passes every event
/// and span on to the subscriber that was in place (`inner`: the program's, a test's, or none).
struct Capture {
    events: Arc<Mutex<Vec<TraceEvent>>>,
    inner: Dispatch,
}

fn ours(metadata: &Metadata<'_>) -> bool {
    metadata.target() == "reattempt"
}

impl Subscriber for Capture {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if ours(metadata) {
            Interest::always()
        } else {
            self.inner.register_callsite(metadata)
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        ours(metadata) || self.inner.enabled(metadata)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        self.inner.new_span(attributes)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.inner.record(span, values);
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.inner.record_follows_from(span, follows);
    }

    fn enter(&self, span: &Id) {
        self.inner.enter(span);
    }

    fn exit(&self, span: &Id) {
        self.inner.exit(span);
    }

    fn clone_span(&self, span: &Id) -> Id {
        self.inner.clone_span(span)
    }

    fn try_close(&self, span: Id) -> bool {
        self.inner.try_close(span)
    }

    fn current_span(&self) -> tracing_core::span::Current {
        self.inner.current_span()
    }

    fn event(&self, event: &Event<'_>) {
        if self.inner.enabled(event.metadata()) {
            self.inner.event(event);
        }
        if !ours(event.metadata()) {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let record = TraceEvent {
            level: *event.metadata().level(),
            message: fields.message,
            fields: fields.fields,
        };
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.fields.push((field.name().to_owned(), text));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.message);
        } else {
            self.fields
                .push((field.name().to_owned(), value.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_durations_parse_back_exactly() {
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_micros(20),
            Duration::from_millis(300),
            Duration::from_millis(1500),
            Duration::new(20, 1),
            Duration::from_secs(86_400),
        ] {
            assert_eq!(parse_debug_duration(&format!("{d:?}")), Some(d), "{d:?}");
        }
        assert_eq!(parse_debug_duration("later"), None);
    }
}
