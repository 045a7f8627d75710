//! `log_error = "none" | "type" | "debug"`: what the retry and give-up events of a
//! `#[retryable]` function say about its error. By default only the type's name, since an error's
//! `Debug` can carry a secret.

use std::sync::{Arc, Mutex};

use reattempt::retryable;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One event's fields, as text.
type Fields = Vec<(String, String)>;

/// The fields of each `reattempt` event.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Fields>>>);

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
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
        event.record(&mut Visitor(&mut fields));
        self.0.lock().expect("not poisoned").push(fields);
    }
}

/// The events `call` makes, each as its fields.
async fn events_of<F: Future<Output = Result<(), Leaky>>>(call: impl FnOnce() -> F) -> Vec<Fields> {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    assert!(call().await.is_err());
    let events = recorder.0.lock().expect("not poisoned").clone();
    // A retry and the give-up.
    assert_eq!(events.len(), 2, "{events:#?}");
    events
}

fn field<'a>(event: &'a [(String, String)], name: &str) -> Option<&'a str> {
    event
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// An error whose `Debug` shows a secret, as a `reqwest::Error` shows its URL.
#[derive(Debug)]
#[allow(dead_code, reason = "read through Debug only")]
struct Leaky {
    url: &'static str,
}

const SECRET: &str = "api_key=sk-SECRET";

fn leak() -> Result<(), Leaky> {
    Err(Leaky {
        url: "https://api.example/charge?api_key=sk-SECRET",
    })
}

#[retryable(max_attempts = 2, delay = "1ms")]
async fn by_default() -> Result<(), Leaky> {
    leak()
}

#[retryable(max_attempts = 2, delay = "1ms", log_error = "type")]
async fn type_only() -> Result<(), Leaky> {
    leak()
}

#[retryable(max_attempts = 2, delay = "1ms", log_error = "debug")]
async fn whole() -> Result<(), Leaky> {
    leak()
}

#[retryable(max_attempts = 2, delay = "1ms", log_error = "none")]
async fn nothing() -> Result<(), Leaky> {
    leak()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn by_default_the_secret_is_not_logged_only_the_type() {
    for events in [events_of(by_default).await, events_of(type_only).await] {
        for event in &events {
            assert!(
                field(event, "error_type").is_some_and(|t| t.ends_with("Leaky")),
                "{event:?}"
            );
            assert_eq!(field(event, "error"), None, "{event:?}");
            assert!(!event.iter().any(|(_, v)| v.contains(SECRET)), "{event:?}");
        }
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn with_log_error_debug_the_error_is_logged_whole() {
    for event in &events_of(whole).await {
        assert!(
            field(event, "error").is_some_and(|e| e.contains(SECRET)),
            "{event:?}"
        );
        assert!(field(event, "error_type").is_some_and(|t| t.ends_with("Leaky")));
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn with_log_error_none_nothing_of_the_error_is_logged() {
    for event in &events_of(nothing).await {
        assert_eq!(field(event, "error"), None, "{event:?}");
        assert_eq!(field(event, "error_type"), None, "{event:?}");
    }
}
