//! An event feed read to the end through broken connections: `GET /events?after=N` sends the
//! events after `N`, one JSON line each (`{"seq":7,"data":"event 7"}`), and the reader resumes
//! from the `seq` of the last event it handed on, so that each event arrives once and in order.
//!
//! The program starts the feed on `127.0.0.1` (port 0) with 500 events, and scripts its first
//! answers to go wrong: the connection reset after 120 events, a 503 (a deploy), a stall after 80
//! events (the connection stays open and silent: the idle limit of 300 ms catches it), and a reset
//! before the first event. The stream is the closure API's `policy.retry_stream(open)
//! .resume(after, advance)`: `open(after)` asks for `?after=` the checkpoint, and `advance` moves
//! the checkpoint to each event's `seq` as the event is handed on. Every event ends with a
//! newline: a body that ends cleanly inside a line was cut, and is resumed like a reset.
//!
//! Run it with `cargo run --example events` (under a second; no setup). Add
//! `RUST_LOG=reattempt=debug` to see the library's event for each resume.
//!
//! To copy it into your own crate (the feed is `reattempt::testing::http::Service`, feature
//! `testing-http`: under `[dev-dependencies]` if only your tests and examples use it):
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["testing-http"] }
//! reqwest = { version = "0.13", features = ["stream"] }
//! futures-util = "0.3"
//! serde = { version = "1", features = ["derive"] }
//! serde_json = "1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "time"] }
//! tracing-subscriber = { version = "0.3", features = ["env-filter"] }
//! ```

use std::fmt;
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use reattempt::testing::http::{EventFault, Service};
use reattempt::{Elapsed, RetryPolicy, Transient};
use serde::Deserialize;
use tracing_subscriber::EnvFilter;

/// One event of the feed.
#[derive(Debug, Deserialize)]
struct Event {
    seq: u64,
    data: String,
}

/// Why reading the feed failed.
#[derive(Debug)]
enum FeedError {
    /// The connection failed, or the body was cut short.
    Http(reqwest::Error),
    /// The feed answered with an error status.
    Status(reqwest::StatusCode),
    /// A line that is not an event.
    Malformed(serde_json::Error),
    /// The body ended cleanly in the middle of a line (of this many bytes): every event ends
    /// with a newline, so the answer was cut (a proxy closing early), not finished.
    Unfinished(usize),
    /// No event for the idle limit.
    Stalled,
}

impl fmt::Display for FeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedError::Http(e) => write!(f, "{e}"),
            FeedError::Status(status) => write!(f, "status {status}"),
            FeedError::Malformed(e) => write!(f, "malformed event: {e}"),
            FeedError::Unfinished(bytes) => {
                write!(f, "the feed ended inside a line ({bytes} bytes unfinished)")
            }
            FeedError::Stalled => f.write_str("no event for too long"),
        }
    }
}

/// A stall is a timeout of ours: `idle_timeout` needs the conversion.
impl From<Elapsed> for FeedError {
    fn from(_: Elapsed) -> Self {
        FeedError::Stalled
    }
}

/// Which failures are worth resuming after: the connection's, 5xx and 429, a stall, a body cut
/// inside a line; a malformed line or a 4xx is not.
impl Transient for FeedError {
    fn is_transient(&self) -> bool {
        match self {
            // A body cut short reads as `is_decode()` through `bytes_stream()`.
            FeedError::Http(e) => {
                e.is_connect() || e.is_request() || e.is_body() || e.is_decode() || e.is_timeout()
            }
            FeedError::Status(status) => status.is_server_error() || status.as_u16() == 429,
            FeedError::Malformed(_) => false,
            FeedError::Unfinished(_) | FeedError::Stalled => true,
        }
    }
}

/// Opens the feed after event `after`: the events of the answer, line by line.
async fn open(
    client: &reqwest::Client,
    url: &str,
    after: u64,
) -> Result<impl Stream<Item = Result<Event, FeedError>> + use<>, FeedError> {
    let response = client
        .get(format!("{url}/events?after={after}"))
        .send()
        .await
        .map_err(FeedError::Http)?;
    if !response.status().is_success() {
        return Err(FeedError::Status(response.status()));
    }
    // Bytes come in chunks that need not end at a line's end: keep the unfinished line.
    let state = (response.bytes_stream(), Vec::new());
    Ok(stream::unfold(state, |(mut body, mut line)| async move {
        loop {
            if let Some(end) = line.iter().position(|&b| b == b'\n') {
                let event: Vec<u8> = line.drain(..=end).collect();
                let event = serde_json::from_slice(&event).map_err(FeedError::Malformed);
                return Some((event, (body, line)));
            }
            match body.next().await {
                Some(Ok(chunk)) => line.extend_from_slice(&chunk),
                Some(Err(e)) => return Some((Err(FeedError::Http(e)), (body, Vec::new()))),
                // A clean end after a whole line is the feed's end; inside a line, the
                // answer was cut: resumed after the last whole event, never dropped silently.
                None if line.is_empty() => return None,
                None => {
                    let unfinished = FeedError::Unfinished(line.len());
                    return Some((Err(unfinished), (body, Vec::new())));
                }
            }
        }
    }))
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .init();

    let feed = Service::start().await;
    feed.publish_events(500);
    feed.script_events([
        EventFault::ResetAfter(120),
        EventFault::Status(503),
        EventFault::StallAfter(80),
        EventFault::ResetAfter(0),
    ]);

    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .delay(Duration::from_millis(20))
        .build()
        .expect("a valid policy");
    let client = reqwest::Client::new();
    let url = feed.url();
    let mut events = policy
        .retry_stream(|after: u64| open(&client, &url, after))
        .resume(0, |after, event: &Event| *after = event.seq)
        .retry_if(FeedError::is_transient)
        .idle_timeout(Duration::from_millis(300))
        .on_retry(|e, _, delay| println!("  resuming in {delay:?} after: {e}"));

    let mut last = 0;
    while let Some(event) = events.next().await {
        let event = event.expect("every failure is resumed");
        assert_eq!(event.seq, last + 1, "each event once, in order");
        last = event.seq;
        if event.seq % 100 == 0 {
            println!("event {}: {}", event.seq, event.data);
        }
    }
    let asked: Vec<u64> = feed.event_requests().iter().map(|r| r.after).collect();
    println!(
        "read events 1 to {last} with {} resumes; the feed was asked for ?after={asked:?}",
        events.resumes()
    );
    assert_eq!(last, 500);
    assert_eq!(feed.events_sent(), 500, "no event was sent twice");
}
