//! The guide's statements that no chapter example holds, each held here by a test whose name
//! says the statement. A chapter cites the test beside its claim (`tests/guide_claims.rs::…`).
//! Under tokio's paused clock: schedules run instantly and sleep times are exact.

use std::io::{self, ErrorKind};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::testing::{Script, trace};
use reattempt::{Jitter, RetryPolicy, recover, retryable};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

fn three_attempts() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .delay(10 * MS)
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

/// How many attempts `reattempt::transient` makes of an `io::Error` of `kind`, on a call said
/// idempotent or not.
async fn attempts_of(kind: ErrorKind, idempotent: bool) -> u32 {
    let calls = AtomicU32::new(0);
    let _ = three_attempts()
        .retry(|| async {
            calls.fetch_add(1, SeqCst);
            Err::<(), _>(io::Error::from(kind))
        })
        .retry_if(reattempt::transient)
        .idempotent(idempotent)
        .await;
    calls.load(SeqCst)
}

/// `errors.md`'s table and `first_retry.md`: the kinds that prove nothing was done are retried
/// on any call; the ones that may come after the server acted only on an idempotent call; the
/// rest never.
#[tokio::test(start_paused = true)]
async fn io_errors_are_retried_by_kind_as_the_errors_chapter_lists() {
    use ErrorKind::*;
    for kind in [
        ConnectionRefused,
        HostUnreachable,
        NetworkUnreachable,
        NetworkDown,
        AddrNotAvailable,
        Interrupted,
        WouldBlock,
    ] {
        assert_eq!(
            attempts_of(kind, false).await,
            3,
            "{kind:?}, not idempotent"
        );
        assert_eq!(attempts_of(kind, true).await, 3, "{kind:?}, idempotent");
    }
    for kind in [
        ConnectionReset,
        ConnectionAborted,
        BrokenPipe,
        UnexpectedEof,
        NotConnected,
        TimedOut,
    ] {
        assert_eq!(
            attempts_of(kind, false).await,
            1,
            "{kind:?}, not idempotent"
        );
        assert_eq!(attempts_of(kind, true).await, 3, "{kind:?}, idempotent");
    }
    for kind in [NotFound, PermissionDenied, InvalidInput, Other] {
        assert_eq!(attempts_of(kind, true).await, 1, "{kind:?}");
    }
}

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Unavailable,
    Fatal,
    Slow(Duration),
    Timeout,
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::Timeout
    }
}

#[retryable(max_attempts = 3, delay = "10ms", retry_if = |_| true, no_retry_on = [ApiError::Fatal])]
async fn excepted(error: ApiError, calls: &AtomicU32) -> Result<(), ApiError> {
    calls.fetch_add(1, SeqCst);
    Err(error)
}

/// `errors.md`: "`no_retry_on` lists exceptions, and wins over everything else", a `retry_if`
/// that says yes to every error included.
#[tokio::test(start_paused = true)]
async fn no_retry_on_wins_over_a_retry_if_that_retries_everything() {
    let calls = AtomicU32::new(0);
    let _ = excepted(ApiError::Fatal, &calls).await;
    assert_eq!(calls.swap(0, SeqCst), 1);
    let _ = excepted(ApiError::Unavailable, &calls).await;
    assert_eq!(calls.load(SeqCst), 3);
}

#[retryable(max_attempts = 1, timeout = "100ms")]
async fn holds_the_lock(lock: &tokio::sync::Mutex<u32>) -> Result<(), ApiError> {
    let mut guard = lock.lock().await;
    *guard += 1;
    std::future::pending::<()>().await;
    Ok(())
}

/// `deadlines.md`: a timed-out attempt's future is dropped with what it owned; "a lock guard is
/// released at once".
#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_releases_its_lock_guard_at_once() {
    let lock = tokio::sync::Mutex::new(0);
    assert_eq!(holds_the_lock(&lock).await, Err(ApiError::Timeout));
    let guard = lock
        .try_lock()
        .expect("the timed-out attempt's guard was dropped");
    assert_eq!(*guard, 1, "the attempt ran up to its pending await");
}

#[retryable(max_attempts = 5, delay = "10ms", jitter = "none", max_elapsed = "1s")]
async fn slower_than_the_deadline(calls: &AtomicU32) -> Result<(), ApiError> {
    calls.fetch_add(1, SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    Err(ApiError::Unavailable)
}

/// `deadlines.md`: "Without `timeout`, `max_elapsed` cannot cut an attempt short: it bounds the
/// sleeps, and the first attempt always runs."
#[tokio::test(start_paused = true)]
async fn without_timeout_max_elapsed_lets_an_attempt_run_past_it_and_starts_no_sleep_after() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(
        slower_than_the_deadline(&calls).await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(start.elapsed(), Duration::from_secs(5), "not cut at 1 s");
    assert_eq!(calls.load(SeqCst), 1, "no sleep starts past the deadline");
}

fn hint(error: &ApiError) -> Option<Duration> {
    match error {
        ApiError::Slow(after) => Some(*after),
        _ => None,
    }
}

#[retryable(max_attempts = 3, delay = "100ms", max_delay = "5s", jitter = "none",
            retry_after = hint, recover = fallback)]
async fn hinted(error: ApiError, calls: &AtomicU32) -> Result<&'static str, ApiError> {
    calls.fetch_add(1, SeqCst);
    Err(error)
}

#[recover]
async fn fallback(err: ApiError, _: ApiError, _: &AtomicU32) -> Result<&'static str, ApiError> {
    match err {
        ApiError::Slow(_) => Ok("cached"),
        other => Err(other),
    }
}

/// `schedules.md`: a hint beyond `max_delay` ends the call with that error, "a `#[recover]`
/// fallback still runs"; a hint under the schedule's delay does not shorten it (a floor).
#[tokio::test(start_paused = true)]
async fn a_hint_beyond_max_delay_ends_the_call_and_recover_still_runs() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(
        hinted(ApiError::Slow(Duration::from_secs(60)), &calls).await,
        Ok("cached")
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(calls.swap(0, SeqCst), 1);

    let start = Instant::now();
    let _ = hinted(ApiError::Slow(Duration::ZERO), &calls).await;
    assert_eq!(
        start.elapsed(),
        300 * MS,
        "Retry-After: 0 still sleeps the schedule's 100 ms, 200 ms"
    );
}

#[retryable(max_attempts = 3, delay = "100ms", max_delay = "1s", jitter = "none",
            retry_after = hint,
            delay_for = |_e, _attempt, _scheduled| Some(Duration::from_secs(30)))]
async fn chosen(error: ApiError) -> Result<(), ApiError> {
    Err(error)
}

#[retryable(max_attempts = 2, delay = "100ms", max_delay = "1s", jitter = "none",
            retry_after = hint,
            delay_for = |_e, _attempt, _scheduled| Some(Duration::from_millis(5)))]
async fn chosen_short(error: ApiError) -> Result<(), ApiError> {
    Err(error)
}

/// `schedules.md`: "The choice is still capped at `max_delay`, and `retry_after` is still a floor
/// under it."
#[tokio::test(start_paused = true)]
async fn delay_for_is_capped_at_max_delay_and_retry_after_stays_a_floor() {
    let start = Instant::now();
    let _ = chosen(ApiError::Unavailable).await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "30 s capped at 1 s, twice"
    );

    let start = Instant::now();
    let _ = chosen_short(ApiError::Slow(400 * MS)).await;
    assert_eq!(start.elapsed(), 400 * MS, "the hint over delay_for's 5 ms");
}

/// `observability.md`: "The closure API takes `.name(…)` (its default is `"retry"`)".
#[tokio::test(start_paused = true)]
async fn the_closure_apis_default_name_is_retry() {
    let policy = three_attempts();
    let (_, seen) = trace(async {
        policy
            .retry(|| async { Err::<(), _>(io::Error::other("down")) })
            .await
    })
    .await;
    let retries = seen.retries();
    assert_eq!(retries.len(), 2);
    assert!(retries.iter().all(|r| r.name == "retry"), "{retries:?}");
    assert_eq!(seen.give_ups()[0].name, "retry");
}

#[retryable(max_attempts = 3, delay = "10ms")]
async fn scripted(api: &Script<u32, io::Error>) -> Result<u32, io::Error> {
    api.next().await
}

/// `testing.md`: "A call that succeeded at once leaves no event".
#[tokio::test(start_paused = true)]
async fn a_call_that_succeeds_at_once_leaves_an_empty_trace() {
    let api = Script::new().ok(1);
    let (outcome, seen) = trace(scripted(&api)).await;
    assert_eq!(outcome.unwrap(), 1);
    assert!(seen.events().is_empty(), "{:?}", seen.events());
}

/// `testing.md`: "events of tasks the future spawns are not in its trace (trace inside the task)".
#[tokio::test(start_paused = true)]
async fn events_of_a_task_the_future_spawns_are_not_in_its_trace() {
    let api = std::sync::Arc::new(Script::new().err(io::Error::other("blip")).ok(2));
    let spawned = api.clone();
    let (inner, seen) = trace(async move {
        tokio::spawn(async move { trace(scripted(&spawned)).await })
            .await
            .unwrap()
    })
    .await;
    assert!(seen.events().is_empty(), "{:?}", seen.events());
    let (outcome, inner) = inner;
    assert_eq!(outcome.unwrap(), 2);
    assert_eq!(
        inner.retries().len(),
        1,
        "traced inside the task, it is there"
    );
}

/// `testing.md`: the text of an error is in the trace only when the policy logs it
/// (`log_error = "debug"`); by default, its type only.
#[tokio::test(start_paused = true)]
async fn a_traces_errors_carry_their_text_only_with_log_error_debug() {
    #[retryable(max_attempts = 2, delay = "10ms")]
    async fn by_default(api: &Script<u32, io::Error>) -> Result<u32, io::Error> {
        api.next().await
    }
    #[retryable(max_attempts = 2, delay = "10ms", log_error = "debug")]
    async fn with_text(api: &Script<u32, io::Error>) -> Result<u32, io::Error> {
        api.next().await
    }
    let api = Script::new().then_always_err_with(|| io::Error::other("token=s3cret"));
    let (_, seen) = trace(by_default(&api)).await;
    let retry = &seen.retries()[0];
    assert_eq!(retry.error_type.as_deref(), Some("std::io::error::Error"));
    assert_eq!(retry.error, None);
    assert!(!format!("{:?}", seen.events()).contains("s3cret"));

    let (_, seen) = trace(with_text(&api)).await;
    assert!(
        seen.retries()[0]
            .error
            .as_deref()
            .unwrap()
            .contains("s3cret")
    );
    assert!(
        seen.give_ups()[0]
            .error
            .as_deref()
            .unwrap()
            .contains("s3cret")
    );
}

static BACKEND: std::sync::LazyLock<reattempt::CircuitBreaker> = std::sync::LazyLock::new(|| {
    reattempt::CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(30))
        .build()
        .unwrap()
});

#[retryable(max_attempts = 1, circuit_breaker = BACKEND)]
async fn guarded(api: &Script<u32, io::Error>) -> Result<u32, io::Error> {
    api.next().await
}

/// `testing.md`: a trace has "the give-ups with their reasons, including a guard's rejection
/// ("circuit breaker open")".
#[tokio::test(start_paused = true)]
async fn a_trace_names_a_breakers_rejection_as_a_give_up() {
    let api = Script::new().then_always_err_with(|| io::Error::other("down"));
    let _ = guarded(&api).await; // one failure opens it
    let (outcome, seen) = trace(guarded(&api)).await;
    assert_eq!(outcome.unwrap_err().to_string(), "circuit breaker is open");
    assert_eq!(api.calls(), 1, "the rejected call never ran its body");
    let give_ups = seen.give_ups();
    assert_eq!(give_ups.len(), 1);
    assert_eq!(give_ups[0].reason, "circuit breaker open");
}

#[retryable(max_attempts = 2, delay = "1m 30s", max_delay = "2m", jitter = "none")]
async fn ninety_seconds() -> Result<(), ApiError> {
    Err(ApiError::Unavailable)
}

/// `schedules.md`: "Durations are strings with a unit: `"250ms"`, `"2s"`, `"1m 30s"`."
#[tokio::test(start_paused = true)]
async fn a_duration_of_several_units_adds_them_up() {
    let start = Instant::now();
    let _ = ninety_seconds().await;
    assert_eq!(start.elapsed(), Duration::from_secs(90));
}

#[retryable(max_attempts = 3, delay = "45s", jitter = "none")]
async fn long_delay() -> Result<(), ApiError> {
    Err(ApiError::Unavailable)
}

/// `schedules.md` and `first_retry.md`: `max_delay` defaults to 20 s, "or `delay`, if larger".
#[tokio::test(start_paused = true)]
async fn the_default_ceiling_rises_to_a_longer_delay() {
    let start = Instant::now();
    let _ = long_delay().await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(90),
        "45 s twice, not 20 s"
    );
}

/// `schedules.md`'s jitter table: `"decorrelated"` draws in [`delay`, 3 × the previous sleep], at
/// most `max_delay`, and "ignores `backoff`".
#[test]
fn decorrelated_jitter_ignores_backoff_and_stays_under_max_delay() {
    use reattempt::Backoff;
    let policy = |backoff| {
        RetryPolicy::builder()
            .max_attempts(12)
            .delay(100 * MS)
            .max_delay(Duration::from_secs(2))
            .backoff(backoff)
            .jitter(Jitter::Decorrelated)
            .build()
            .unwrap()
    };
    let (exponential, linear) = (policy(Backoff::Exponential), policy(Backoff::Linear));
    for seed in 0..50 {
        let sleeps: Vec<Duration> = exponential.delays_seeded(seed).collect();
        assert!(
            linear.delays_seeded(seed).eq(sleeps.iter().copied()),
            "seed {seed}"
        );
        let mut previous = 100 * MS;
        for &sleep in &sleeps {
            assert!(sleep >= 100 * MS && sleep <= (previous * 3).min(Duration::from_secs(2)));
            previous = sleep;
        }
    }
}

/// The `elapsed()` each attempt of a call read after 10 ms of work, asking for `context()` at
/// the top of the body or only after the work.
async fn elapsed_read(at_the_top: bool, max_elapsed: bool) -> Vec<Duration> {
    let mut builder = RetryPolicy::builder()
        .max_attempts(3)
        .delay(100 * MS)
        .jitter(Jitter::None);
    if max_elapsed {
        builder = builder.max_elapsed(Duration::from_secs(60));
    }
    let policy = builder.build().unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let _ = policy
        .retry(|| async {
            let early = at_the_top.then(|| reattempt::context().unwrap());
            tokio::time::sleep(10 * MS).await;
            let ctx = early.unwrap_or_else(|| reattempt::context().unwrap());
            seen.lock().unwrap().push(ctx.elapsed());
            Err::<(), _>(io::Error::other("down"))
        })
        .await;
    seen.into_inner().unwrap()
}

/// `deadlines.md`: `elapsed()` counts from the first attempt's start only with `max_elapsed`;
/// otherwise from the first `context()` call (or the end of the first failed attempt): "Ask for
/// `context()` at the top of the body, or set `max_elapsed`, to measure the whole call."
#[tokio::test(start_paused = true)]
async fn elapsed_counts_the_whole_call_with_max_elapsed_or_a_context_asked_at_the_top() {
    let whole = [10 * MS, 120 * MS, 330 * MS];
    assert_eq!(elapsed_read(false, true).await, whole);
    assert_eq!(elapsed_read(true, false).await, whole);
    assert_eq!(
        elapsed_read(false, false).await,
        [Duration::ZERO, 110 * MS, 320 * MS],
        "the first attempt's 10 ms before the first context() are not counted"
    );
}

#[derive(Debug)]
struct TooManyRequests;

impl reattempt::Transient for TooManyRequests {
    fn is_transient(&self) -> bool {
        true
    }
    fn class(&self) -> reattempt::ErrorClass {
        reattempt::ErrorClass::Throttling
    }
}

static THROTTLED_SLEEPS: std::sync::Mutex<Vec<Duration>> = std::sync::Mutex::new(Vec::new());

#[retryable(max_attempts = 4, delay = "10ms", throttling_delay = "1s", max_delay = "3s",
            jitter = "none", retry_if = reattempt::transient,
            on_retry = |_, _, sleep| THROTTLED_SLEEPS.lock().unwrap().push(sleep))]
async fn throttled() -> Result<(), TooManyRequests> {
    Err(TooManyRequests)
}

/// `schedules.md`: a throttling error "waits from `throttling_delay`, growing as `delay` does",
/// each sleep capped at `max_delay`.
#[tokio::test(start_paused = true)]
async fn throttling_delay_grows_as_delay_does_under_max_delay() {
    let _ = throttled().await;
    let s = Duration::from_secs;
    assert_eq!(*THROTTLED_SLEEPS.lock().unwrap(), [s(1), s(2), s(3)]);
}

/// The runtime's source, read for what it emits: `retry-runtime/src/engine/events.rs`.
const EVENTS_RS: &str = include_str!("../retry-runtime/src/engine/events.rs");
const OBSERVABILITY_MD: &str = include_str!("../docs/guide/observability.md");
const METERS_RS: &str = include_str!("../retry-runtime/src/engine/meters.rs");
const SPANS_RS: &str = include_str!("../retry-runtime/src/engine/spans.rs");

/// The last string literal of each `tracing::…!( … )` call in `source`: its message, with a
/// `\` line continuation joined as Rust joins it; and whether the call names the target
/// `reattempt`.
fn event_messages(source: &str) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    for level in ["trace", "debug", "info", "warn", "error"] {
        let opener = format!("tracing::{level}!(");
        let mut rest = source;
        while let Some(at) = rest.find(&opener) {
            let body = &rest[at + opener.len()..];
            let mut depth = 1;
            let mut in_string = false;
            let mut escaped = false;
            let mut end = 0;
            for (i, c) in body.char_indices() {
                match (in_string, escaped, c) {
                    (true, true, _) => escaped = false,
                    (true, false, '\\') => escaped = true,
                    (_, false, '"') => in_string = !in_string,
                    (false, _, '(') => depth += 1,
                    (false, _, ')') => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let call = &body[..end];
            let close = call.rfind('"').expect("a message");
            // Walk back to the literal's opening quote (skipping escaped quotes).
            let bytes = call.as_bytes();
            let mut start = close;
            loop {
                start -= 1;
                if bytes[start] == b'"' && bytes[start - 1] != b'\\' {
                    break;
                }
            }
            let literal = &call[start + 1..close];
            let joined: String = literal
                .split("\\\n")
                .map(str::trim_start)
                .collect::<Vec<_>>()
                .join("");
            found.push((
                level.to_uppercase(),
                joined,
                call.contains("target: \"reattempt\""),
            ));
            rest = &body[end..];
        }
    }
    found
}

/// `observability.md`'s table of events lists every event the runtime emits, at its level, and
/// each has the target `reattempt`.
#[test]
fn every_event_of_the_runtime_is_in_the_observability_chapter() {
    let messages = event_messages(EVENTS_RS);
    assert!(messages.len() >= 12, "{messages:?}");
    let rows: Vec<&str> = OBSERVABILITY_MD
        .lines()
        .filter(|l| l.starts_with("| "))
        .collect();
    for (level, message, targeted) in messages {
        assert!(targeted, "`{message}` has the target `reattempt`");
        // A breaker's transition names its new state: "circuit breaker open".
        let message = message.replace("{to}", "open");
        let row = rows
            .iter()
            .find(|row| row.contains(&format!("`{message}`")))
            .unwrap_or_else(|| panic!("`{message}` ({level}) is not in the chapter's table"));
        assert!(
            row.contains(&format!("`{level}`")),
            "`{message}` is {level}, the chapter says: {row}"
        );
    }
}

/// `observability.md`'s table of metrics is the runtime's table (`engine/meters.rs`), row for
/// row: each metric's name, kind, unit and attributes; and the runtime records only metrics of
/// that table ("Every metric has `reattempt.name`").
#[test]
fn every_metric_of_the_runtime_is_in_the_observability_chapter() {
    // The table's rows, as the source writes them: `Metric { name: CALLS, kind: Kind::Counter,
    // unit: "{call}", attributes: &[NAME, OUTCOME], … }`, each constant a string above it.
    let constant = |ident: &str| -> String {
        let at = METERS_RS
            .find(&format!("const {ident}: &str = \""))
            .unwrap_or_else(|| panic!("constant {ident}"));
        let value = &METERS_RS[at..];
        let value = &value[value.find('"').unwrap() + 1..];
        value[..value.find('"').unwrap()].to_owned()
    };
    let field = |row: &str, key: &str| -> String {
        let at = row
            .find(&format!("{key}: "))
            .unwrap_or_else(|| panic!("{key} in {row}"));
        let rest = &row[at + key.len() + 2..];
        // A list (`&[NAME, OUTCOME]`) ends at its bracket, a value at the next field.
        let end = if rest.starts_with("&[") {
            rest.find(']').unwrap() + 1
        } else {
            rest.find(", ").unwrap()
        };
        rest[..end].to_owned()
    };
    let mut table: Vec<Vec<String>> = METERS_RS
        .lines()
        .filter(|l| l.trim_start().starts_with("Metric {"))
        .map(|row| {
            let attributes = field(row, "attributes");
            let attributes = if attributes == "BY_NAME" {
                vec![constant("NAME")]
            } else {
                attributes
                    .trim_start_matches("&[")
                    .trim_end_matches(']')
                    .split(", ")
                    .map(constant)
                    .collect()
            };
            let kind = field(row, "kind")
                .trim_start_matches("Kind::")
                .to_lowercase();
            vec![
                constant(&field(row, "name")),
                kind,
                field(row, "unit").trim_matches('"').to_owned(),
                attributes.join(", "),
            ]
        })
        .collect();
    assert!(table.len() >= 12, "{table:?}");
    let mut documented: Vec<Vec<String>> = section(OBSERVABILITY_MD, "## Metrics")
        .lines()
        .filter(|l| l.starts_with("| `reattempt."))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            vec![
                cells[0]
                    .trim_start_matches("| ")
                    .trim_matches('`')
                    .to_owned(),
                cells[1].to_owned(),
                cells[2].trim_matches('`').to_owned(),
                cells[3].replace('`', ""),
            ]
        })
        .collect();
    table.sort();
    documented.sort();
    assert_eq!(table, documented);
    // Each metric the events record is one of the table's constants, with the call's name.
    for opener in ["counter!(", "histogram!(", "gauge!("] {
        for (at, _) in EVENTS_RS.match_indices(opener) {
            let call = &EVENTS_RS[at + opener.len()..];
            let call = &call[..call.find(')').unwrap()];
            assert!(
                call.starts_with("meters::"),
                "a metric of the table: {call}"
            );
            assert!(
                call.contains("meters::NAME => name"),
                "every metric has the call's name: {call}"
            );
        }
    }
}

/// The part of `markdown` under `heading`, to the next heading of its level (the tables of
/// metrics and of span attributes share names such as `reattempt.attempts`).
fn section<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let start = markdown
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("{heading}"))
        + 1;
    let rest = &markdown[start + heading.len()..];
    let end = rest
        .find("\n## ")
        .map_or(markdown.len(), |at| start + heading.len() + at);
    &markdown[start..end]
}

/// Each span of `source` (`tracing::info_span!( … )`): its name and its fields, as declared
/// (`reattempt.attempt = attempt` and `"error.type" = Empty` give `reattempt.attempt` and
/// `error.type`).
fn span_fields(source: &str) -> Vec<(String, Vec<String>)> {
    let opener = "tracing::info_span!(";
    let mut found = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(opener) {
        let body = &rest[at + opener.len()..];
        let end = body
            .find("\n    );")
            .or_else(|| body.find(");"))
            .expect("the span's end");
        let call = &body[..end];
        let mut name = None;
        let mut fields = Vec::new();
        for line in call.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let line = line.trim_end_matches(',');
            if line.starts_with("target:") || line.starts_with("parent:") {
                continue;
            }
            if let Some((field, _)) = line.split_once(" = ") {
                fields.push(field.trim_matches('"').to_owned());
            } else if name.is_none() && line.starts_with('"') {
                name = Some(line.trim_matches('"').to_owned());
            }
        }
        found.push((name.expect("the span's name"), fields));
        rest = &body[end..];
    }
    found
}

/// `observability.md`'s table of span attributes lists every field of every span the runtime
/// declares (`engine/spans.rs`), each on a row that names that span.
#[test]
fn every_span_field_of_the_runtime_is_in_the_observability_chapter() {
    let spans = span_fields(SPANS_RS);
    let names: Vec<&str> = spans.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["retry", "attempt", "backoff"]);
    assert!(
        spans[1].1.contains(&"previous-rpc-attempts".to_owned()),
        "{spans:?}"
    );
    let rows: Vec<Vec<&str>> = section(OBSERVABILITY_MD, "## Spans")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split(" | ").collect())
        .collect();
    for (span, fields) in &spans {
        for field in fields {
            let row = rows
                .iter()
                .find(|cells| cells[0] == format!("| `{field}`"))
                .unwrap_or_else(|| panic!("`{field}` ({span}) is not in the chapter's table"));
            assert!(
                row[1].split(", ").any(|on| on == format!("`{span}`")),
                "`{field}` is on `{span}`, the chapter says: {row:?}"
            );
        }
    }
}
