//! The call and its attempts as `tracing` spans (feature `spans`): the tree a subscriber sees,
//! and the attributes OpenTelemetry's conventions name, through the closure API and a resumed
//! stream. (The exported OpenTelemetry trace, through the attribute, the tower layer and the
//! gRPC layer: `e2e/tests/otel_spans.rs`.)
#![cfg(feature = "spans")]

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::{Jitter, RetryPolicy};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span as recorded: its name, its parent's name, and its fields as text.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    parent: Option<String>,
    fields: HashMap<String, String>,
    /// The parent's `otel.name` when this span was made: an OpenTelemetry exporter
    /// (`tracing-opentelemetry`) fixes a span's name when its first child is made.
    parent_named: Option<String>,
    closed: bool,
}

#[derive(Clone, Default)]
struct Tree(Arc<Mutex<Vec<(u64, Seen)>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Tree {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        let parent = ctx.span(id).and_then(|s| s.parent());
        seen.parent = parent.as_ref().map(|p| p.name().to_owned());
        let mut spans = self.0.lock().unwrap();
        if let Some(parent) = parent {
            seen.parent_named = spans
                .iter()
                .rev()
                .find(|(n, _)| *n == parent.id().into_u64())
                .and_then(|(_, p)| p.fields.get("otel.name").cloned());
        }
        spans.push((id.into_u64(), seen));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, seen)) = spans.iter_mut().rev().find(|(n, _)| *n == id.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, seen)) = spans.iter_mut().rev().find(|(n, _)| *n == id.into_u64()) {
            seen.closed = true;
        }
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
async fn a_call_given_up_after_two_retries_is_a_tree_of_its_attempts() {
    let tree = Tree::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(tree.clone()));
    let outer = tracing::info_span!("request");
    let _outer = outer.enter();
    let out: io::Result<()> = policy()
        .retry(|| async {
            // A span the attempt's own code opens (an HTTP client's) is the attempt's child.
            let _client = tracing::info_span!("http.client").entered();
            Err(io::ErrorKind::ConnectionReset.into())
        })
        .name("charge")
        .await;
    assert!(out.is_err());
    let spans: Vec<Seen> = tree
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(_, s)| s.clone())
        .collect();
    let names: Vec<(&str, Option<&str>)> = spans
        .iter()
        .map(|s| (s.name.as_str(), s.parent.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("request", None),
            ("retry", Some("request")),
            ("attempt", Some("retry")),
            ("http.client", Some("attempt")),
            ("backoff", Some("retry")),
            ("attempt", Some("retry")),
            ("http.client", Some("attempt")),
            ("backoff", Some("retry")),
            ("attempt", Some("retry")),
            ("http.client", Some("attempt")),
        ]
    );
    let call = &spans[1].fields;
    assert_eq!(call["otel.name"], "charge");
    assert_eq!(call["reattempt.name"], "charge");
    assert_eq!(call["reattempt.attempts"], "3");
    assert_eq!(call["otel.status_code"], "error");
    assert_eq!(call["error.type"], "std::io::error::Error");
    assert_eq!(call["reattempt.give_up_reason"], "attempts exhausted");
    for (attempt, n) in spans.iter().filter(|s| s.name == "attempt").zip(1..) {
        assert_eq!(attempt.fields["reattempt.attempt"], n.to_string());
        assert_eq!(
            attempt.parent_named.as_deref(),
            Some("charge"),
            "the call named before its attempts are made under it"
        );
        assert_eq!(attempt.fields["reattempt.hedge"], "false");
        assert_eq!(attempt.fields["error.type"], "std::io::error::Error");
        assert_eq!(attempt.fields["reattempt.class"], "transient");
        assert_eq!(attempt.fields["otel.status_code"], "error");
    }
    let delays: Vec<&str> = spans
        .iter()
        .filter(|s| s.name == "backoff")
        .map(|s| s.fields["reattempt.delay_ms"].as_str())
        .collect();
    assert_eq!(delays, ["100", "200"]);
    assert!(
        spans.iter().skip(1).all(|s| s.closed),
        "every span of the call closed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_that_succeeds_is_one_attempt_without_error() {
    let tree = Tree::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(tree.clone()));
    let mut tries = 0;
    let out: io::Result<u8> = policy()
        .retry(|| {
            tries += 1;
            let n = tries;
            async move {
                if n < 2 {
                    Err(io::ErrorKind::ConnectionReset.into())
                } else {
                    Ok(7)
                }
            }
        })
        .idempotent(true)
        .await;
    assert_eq!(out.unwrap(), 7);
    let spans: Vec<Seen> = tree
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(_, s)| s.clone())
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["retry", "attempt", "backoff", "attempt"]);
    assert!(
        !spans[0].fields.contains_key("otel.status_code"),
        "{:?}",
        spans[0].fields
    );
    assert_eq!(spans[0].fields["reattempt.attempts"], "2");
    assert!(!spans[3].fields.contains_key("error.type"));
}

#[tokio::test(start_paused = true)]
async fn without_a_subscriber_that_wants_them_no_span_is_made() {
    // A subscriber that wants nothing of the crate's: the call asks once and makes none.
    let tree = Tree::default();
    let filter = tracing_subscriber::filter::filter_fn(|meta| meta.target() != "reattempt");
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(tree.clone().with_filter(filter)),
    );
    let out: io::Result<()> = policy()
        .retry(|| async { Err(io::ErrorKind::ConnectionReset.into()) })
        .await;
    assert!(out.is_err());
    assert!(tree.0.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_resumed_stream_is_a_call_whose_attempts_are_its_opens() {
    use futures_util::{StreamExt, stream};
    let tree = Tree::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(tree.clone()));
    let items: Vec<u64> = policy()
        .retry_stream(|after: u64| async move {
            let reset = (after < 2).then(|| Err(io::Error::from(io::ErrorKind::ConnectionReset)));
            Ok(stream::iter([Ok(after + 1)]).chain(stream::iter(reset)))
        })
        .resume(0, |after, item: &u64| *after = *item)
        .name("feed")
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, [1, 2, 3]);
    let spans: Vec<Seen> = tree
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(_, s)| s.clone())
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "retry", "attempt", "backoff", "attempt", "backoff", "attempt"
        ]
    );
    assert_eq!(spans[0].fields["otel.name"], "feed");
    assert!(!spans[0].fields.contains_key("otel.status_code"));
    assert!(spans.iter().all(|s| s.closed));
}
