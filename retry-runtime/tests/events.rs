//! The tracing events: one per retry (DEBUG) and one when giving up (WARN after retries, DEBUG for
//! a non-retryable error), each with the call's name, the attempt, the delay and the error.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::{Jitter, RetryPolicy};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One recorded event: its level and its fields as text.
#[derive(Debug, Clone)]
struct Recorded {
    level: Level,
    fields: Vec<(String, String)>,
}

impl Recorded {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "reattempt" {
            return;
        }
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Recorded {
            level: *event.metadata().level(),
            fields,
        });
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(100))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn each_retry_and_the_give_up_are_events() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let out: io::Result<()> = policy()
        .retry(|| async { Err(io::ErrorKind::ConnectionReset.into()) })
        .name("fetch")
        .await;
    assert!(out.is_err());
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 3, "{events:#?}");
    for (event, (attempt, delay)) in events.iter().zip([("1", "100"), ("2", "200")]) {
        assert_eq!(event.level, Level::DEBUG);
        assert_eq!(event.field("name"), Some("fetch"));
        assert_eq!(event.field("attempt"), Some(attempt));
        assert_eq!(event.field("delay_ms"), Some(delay));
        assert!(event.field("error").unwrap().contains("ConnectionReset"));
    }
    let give_up = &events[2];
    assert_eq!(give_up.level, Level::WARN);
    assert_eq!(give_up.field("attempt"), Some("3"));
    assert_eq!(give_up.field("reason"), Some("attempts exhausted"));
}

#[tokio::test(start_paused = true)]
async fn a_non_retryable_error_is_one_debug_event() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let out: io::Result<()> = policy()
        .retry(|| async { Err(io::ErrorKind::PermissionDenied.into()) })
        .when(retry_runtime::transient)
        .await;
    assert!(out.is_err());
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].level, Level::DEBUG);
    assert_eq!(events[0].field("reason"), Some("not retryable"));
}

#[tokio::test(start_paused = true)]
async fn a_first_success_records_nothing() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let out: io::Result<u8> = policy().retry(|| async { Ok(1) }).await;
    assert_eq!(out.unwrap(), 1);
    assert!(recorder.0.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn each_breaker_transition_is_an_info_event() {
    use retry_runtime::CircuitBreaker;
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(1))
        .name("payments")
        .build()
        .unwrap();
    let permit = breaker.try_acquire().unwrap();
    breaker.record(permit, false);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let probe = breaker.try_acquire().unwrap();
    breaker.record(probe, true);
    let events = recorder.0.lock().unwrap().clone();
    let transitions: Vec<_> = events
        .iter()
        .map(|e| {
            assert_eq!(e.level, Level::INFO);
            assert_eq!(e.field("breaker"), Some("payments"));
            (
                e.field("from").unwrap().to_owned(),
                e.field("to").unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        transitions,
        [
            ("closed".to_owned(), "open".to_owned()),
            ("open".to_owned(), "half-open".to_owned()),
            ("half-open".to_owned(), "closed".to_owned())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_rejection_by_an_open_breaker_is_not_a_warning() {
    use retry_runtime::CircuitBreaker;
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let permit = breaker.try_acquire().unwrap();
    breaker.record(permit, false);
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let out: io::Result<()> = policy()
        .retry(|| async { Ok(()) })
        .circuit_breaker(&breaker)
        .await;
    assert!(out.is_err());
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].level, Level::DEBUG);
    assert_eq!(events[0].field("reason"), Some("circuit breaker open"));
}
