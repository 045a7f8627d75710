//! The tracing events: one per retry (DEBUG) and one when giving up (WARN after retries, DEBUG for
//! a non-retryable error), each with the call's name, the attempt, the delay and the error as the
//! policy's `log_error` says (by default its type's name only: its `Debug` may carry a secret).

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::{Jitter, LogError, RetryPolicy};
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
    for (event, (attempt, delay)) in events.iter().zip([("1", "100ms"), ("2", "200ms")]) {
        assert_eq!(event.level, Level::DEBUG);
        assert_eq!(event.field("name"), Some("fetch"));
        assert_eq!(event.field("attempt"), Some(attempt));
        assert_eq!(event.field("delay"), Some(delay));
        assert_eq!(event.field("error_type"), Some("std::io::error::Error"));
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
        .retry_if(retry_runtime::transient)
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

/// An error whose `Debug` carries a secret, as a `reqwest::Error`'s carries its URL.
struct Leaky;

impl std::fmt::Debug for Leaky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Leaky { url: \"https://api.example.com/v1/quote?api_key=SECRET\" }")
    }
}

impl From<retry_runtime::Elapsed> for Leaky {
    fn from(_: retry_runtime::Elapsed) -> Self {
        Leaky
    }
}

impl From<retry_runtime::BreakerOpen> for Leaky {
    fn from(_: retry_runtime::BreakerOpen) -> Self {
        Leaky
    }
}

fn leaky_policy(log: Option<LogError>) -> RetryPolicy {
    let mut b = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(100))
        .jitter(Jitter::None);
    if let Some(log) = log {
        b = b.log_error(log);
    }
    b.build().unwrap()
}

/// Every event of calls that fail with `Leaky`: retried then exhausted, not retryable, and
/// rejected by an open breaker; through the closure API and through `Call` (the attribute's driver).
async fn leaky_events(log: Option<LogError>) -> Vec<Recorded> {
    use retry_runtime::__private::{Call, Decision, Guards};
    use retry_runtime::{CircuitBreaker, FnHooks};
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let policy = leaky_policy(log);
    let out: Result<(), Leaky> = policy
        .retry(|| async { Err(Leaky) })
        .name("exhausted")
        .await;
    assert!(out.is_err());
    let out: Result<(), Leaky> = policy
        .retry(|| async { Err(Leaky) })
        .retry_if(|_: &Leaky| false)
        .name("not_retryable")
        .await;
    assert!(out.is_err());
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let out: Result<(), Leaky> = policy
        .retry(|| async { Err(Leaky) })
        .circuit_breaker(&breaker)
        .name("rejected")
        .await;
    assert!(out.is_err());
    let mut call = Call::new(&policy);
    let out: Result<(), Leaky> = loop {
        let res = call.attempt(async { Err(Leaky) }).await;
        match call.decide("call", &mut FnHooks::of(&res), res, Guards::NONE) {
            Decision::Stop(r) => break r,
            Decision::Retry(d) => call.sleep(d).await,
        }
    };
    assert!(out.is_err());
    recorder.0.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_secret_in_an_errors_debug_never_reaches_the_log_by_default() {
    let events = leaky_events(None).await;
    assert!(events.len() >= 8, "{events:#?}");
    for event in &events {
        for (key, value) in &event.fields {
            assert!(
                !value.contains("SECRET"),
                "{key} = {value} at {}",
                event.level
            );
        }
    }
    // The error's type is named, and nothing more.
    let failures: Vec<_> = events
        .iter()
        .filter(|e| e.field("name").is_some())
        .collect();
    assert!(!failures.is_empty());
    for event in failures {
        assert_eq!(
            event.field("error_type"),
            Some("events::Leaky"),
            "{event:#?}"
        );
        assert_eq!(event.field("error"), None, "{event:#?}");
    }
}

#[tokio::test(start_paused = true)]
async fn log_error_debug_logs_the_whole_error() {
    let events = leaky_events(Some(LogError::Debug)).await;
    let failures: Vec<_> = events
        .iter()
        .filter(|e| e.field("name").is_some())
        .collect();
    assert!(failures.len() >= 7, "{events:#?}");
    for event in failures {
        assert!(
            event.field("error").unwrap().contains("api_key=SECRET"),
            "{event:#?}"
        );
        assert_eq!(event.field("error_type"), Some("events::Leaky"));
    }
}

#[tokio::test(start_paused = true)]
async fn log_error_none_logs_nothing_of_the_error() {
    let events = leaky_events(Some(LogError::None)).await;
    let failures: Vec<_> = events
        .iter()
        .filter(|e| e.field("name").is_some())
        .collect();
    assert!(failures.len() >= 7, "{events:#?}");
    for event in failures {
        assert_eq!(event.field("error"), None, "{event:#?}");
        assert_eq!(event.field("error_type"), None, "{event:#?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_delay_under_a_millisecond_is_logged_as_it_is() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_micros(250))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let out: io::Result<()> = policy
        .retry(|| async { Err(io::ErrorKind::ConnectionReset.into()) })
        .await;
    assert!(out.is_err());
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events[0].field("delay"), Some("250µs"), "{events:#?}");
}

/// A rejection is reported as the attempt that was not made: attempt 1 when the breaker is open
/// on entry, attempt 2 when it opened on the first failure.
#[tokio::test(start_paused = true)]
async fn a_rejection_names_the_attempt_it_refused() {
    use retry_runtime::CircuitBreaker;
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let out: Result<(), Leaky> = policy()
        .retry(|| async { Err(Leaky) })
        .circuit_breaker(&breaker)
        .name("opens")
        .await;
    assert!(out.is_err());
    let out: Result<(), Leaky> = policy()
        .retry(|| async { Err(Leaky) })
        .circuit_breaker(&breaker)
        .name("open")
        .await;
    assert!(out.is_err());
    let events = recorder.0.lock().unwrap().clone();
    let rejections: Vec<_> = events
        .iter()
        .filter(|e| e.field("reason") == Some("circuit breaker open"))
        .map(|e| (e.field("name").unwrap(), e.field("attempt").unwrap()))
        .collect();
    assert_eq!(rejections, [("opens", "2"), ("open", "1")], "{events:#?}");
}

/// The same through `Call`, as the attribute's generated code drives it: the breaker is asked
/// before the attempt, and a rejected attempt is never begun.
#[tokio::test(start_paused = true)]
async fn a_rejection_names_the_attempt_it_refused_in_the_attributes_driver() {
    use retry_runtime::__private::{Call, Decision, Guards};
    use retry_runtime::{CircuitBreaker, FnHooks};
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let policy = policy();
    for name in ["opens", "open"] {
        let mut call = Call::new(&policy);
        let out: Result<(), Leaky> = loop {
            let permit = call.admit(Some(&breaker), None, false, false).breaker();
            let res = if permit.rejected() {
                Err(Leaky)
            } else {
                call.attempt(async { Err(Leaky) }).await
            };
            let guards = Guards::NONE.breaker(&breaker, permit);
            match call.decide(name, &mut FnHooks::of(&res), res, guards) {
                Decision::Stop(r) => break r,
                Decision::Retry(d) => call.sleep(d).await,
            }
        };
        assert!(out.is_err());
    }
    let events = recorder.0.lock().unwrap().clone();
    let rejections: Vec<_> = events
        .iter()
        .filter(|e| e.field("reason") == Some("circuit breaker open"))
        .map(|e| (e.field("name").unwrap(), e.field("attempt").unwrap()))
        .collect();
    assert_eq!(rejections, [("opens", "2"), ("open", "1")], "{events:#?}");
}

/// A blocking call's sleeps, made as the generated code of a blocking `#[retryable]` fn makes them.
fn blocking_call_sleeping(policy: &RetryPolicy, sleeps: u32, delay: Duration) {
    let mut call = retry_runtime::__private::Call::new(policy);
    for _ in 0..sleeps {
        call.attempt_blocking(|| ());
        call.sleep_blocking(delay);
    }
}

/// On a multi-thread runtime a blocking sleep hands the worker's other tasks to another thread
/// (`block_in_place`), instead of freezing them for the sleep.
#[test]
fn a_blocking_sleep_on_a_multi_thread_worker_lets_other_tasks_run() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ran_meanwhile = rt.block_on(async {
        tokio::spawn(async {
            let (tx, rx) = std::sync::mpsc::channel();
            // The only worker is running this task: `other` runs during the sleep only if the
            // sleep gives the worker up.
            let other = tokio::spawn(async move { tx.send(()).unwrap() });
            blocking_call_sleeping(&policy(), 1, Duration::from_millis(500));
            let ran = rx.try_recv().is_ok();
            other.await.unwrap();
            ran
        })
        .await
        .unwrap()
    });
    assert!(ran_meanwhile);
}

/// On a current-thread runtime nothing can take the thread's other tasks: the sleep blocks them
/// (it does not panic, as `block_in_place` would) and the call warns, once.
#[tokio::test]
async fn a_blocking_sleep_on_a_current_thread_runtime_warns_once_per_call() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    blocking_call_sleeping(&policy(), 2, Duration::from_millis(1));
    blocking_call_sleeping(&policy(), 2, Duration::from_millis(1));
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:#?}");
    for event in events {
        assert_eq!(event.level, Level::WARN);
        assert!(
            event.field("message").unwrap().contains("current-thread"),
            "{event:#?}"
        );
    }
}

/// Outside a runtime a blocking sleep is a plain one, and nothing is logged.
#[test]
fn a_blocking_sleep_outside_a_runtime_is_silent() {
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    blocking_call_sleeping(&policy(), 2, Duration::from_millis(1));
    assert!(recorder.0.lock().unwrap().is_empty());
}

/// Issue 25, finding 1: the retry event of a hedged copy that fails while a later copy runs
/// names that copy's attempt (1), not the newest copy's (2).
#[tokio::test(start_paused = true)]
async fn a_hedged_copys_retry_event_names_its_own_attempt() {
    use retry_runtime::{Backoff, HedgeAfter, context};
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let ms = Duration::from_millis(1);
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(20 * ms)
        .backoff(Backoff::Fixed)
        .jitter(Jitter::None)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(50 * ms))
        .build()
        .unwrap();
    let out: io::Result<u32> = policy
        .retry(|| {
            let n = context().unwrap().attempt();
            async move {
                let took = match n {
                    1 => 70,
                    2 => 1000,
                    _ => 10,
                };
                tokio::time::sleep(took * ms).await;
                if n == 1 {
                    Err(io::ErrorKind::ConnectionReset.into())
                } else {
                    Ok(n)
                }
            }
        })
        .name("hedged")
        .await;
    assert_eq!(out.unwrap(), 3);
    let events = recorder.0.lock().unwrap().clone();
    let retries: Vec<_> = events
        .iter()
        .filter(|e| e.field("message") == Some("attempt failed; retrying"))
        .collect();
    assert_eq!(retries.len(), 1, "{events:#?}");
    assert_eq!(retries[0].field("attempt"), Some("1"), "{events:#?}");
}

#[tokio::test(start_paused = true)]
async fn each_resume_of_a_stream_is_an_event() {
    use futures_util::{StreamExt, stream};
    let recorder = Recorder::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    // Breaks after each item, up to item 3.
    let items: Vec<_> = policy()
        .retry_stream(|after: u64| async move {
            let next = stream::iter([Ok(after + 1)]);
            let reset = (after < 2).then(|| Err(io::Error::from(io::ErrorKind::ConnectionReset)));
            Ok::<_, io::Error>(next.chain(stream::iter(reset)))
        })
        .resume(0, |after, item: &u64| *after = *item)
        .name("feed")
        .collect()
        .await;
    assert_eq!(
        items.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let events = recorder.0.lock().unwrap().clone();
    let resumed: Vec<_> = events
        .iter()
        .filter(|e| e.field("message") == Some("stream resumed"))
        .collect();
    assert_eq!(resumed.len(), 2, "{events:#?}");
    for (event, n) in resumed.iter().zip(["1", "2"]) {
        assert_eq!(event.level, Level::DEBUG);
        assert_eq!(event.field("name"), Some("feed"));
        assert_eq!(event.field("resumes"), Some(n));
        assert_eq!(
            event.field("attempt"),
            Some("2"),
            "progress started the schedule again"
        );
    }
    let retries = events
        .iter()
        .filter(|e| e.field("message") == Some("attempt failed; retrying"));
    assert_eq!(retries.count(), 2);
}
