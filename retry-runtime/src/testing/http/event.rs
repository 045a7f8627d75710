//! The event feed `GET /events?after=N` serves: the line of each event, the faults a request for
//! the feed can meet, and the record of each request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

/// The line the feed sends for event `seq` (its newline included): one JSON object per line,
/// `{"seq":7,"data":"event 7"}`.
///
/// ```
/// use reattempt::testing::http::{Service, event_line};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.publish_events(3);
///     let feed = reqwest::get(format!("{}/events?after=1", service.url())).await.unwrap();
///     assert_eq!(feed.text().await.unwrap(), format!("{}{}", event_line(2), event_line(3)));
///     assert_eq!(event_line(7), "{\"seq\":7,\"data\":\"event 7\"}\n");
/// }
/// ```
pub fn event_line(seq: u64) -> String {
    format!("{{\"seq\":{seq},\"data\":\"event {seq}\"}}\n")
}

/// What happens to one request for the event feed, drawn in turn from the feed's script
/// ([`Service::script_events`]); a request with nothing scripted meets [`EventFault::Pass`].
///
/// ```
/// use reattempt::testing::http::{EventFault, Service, event_line};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.publish_events(5);
///     service.script_events([EventFault::ResetAfter(2), EventFault::Status(503)]);
///     let url = format!("{}/events?after=0", service.url());
///     let mut feed = reqwest::get(&url).await.unwrap();
///     let mut text = Vec::new();
///     while let Ok(Some(chunk)) = feed.chunk().await {
///         text.extend_from_slice(&chunk);
///     }
///     assert_eq!(text, format!("{}{}", event_line(1), event_line(2)).into_bytes());
///     assert_eq!(reqwest::get(&url).await.unwrap().status(), 503);
///     assert_eq!(service.event_requests()[0].sent, 2);
/// }
/// ```
///
/// [`Service::script_events`]: super::Service::script_events
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventFault {
    /// No fault: every event after `N` published so far is sent, then the body ends.
    Pass,
    /// After this many events (and once they have left the server's socket), the connection is
    /// reset (TCP RST). With fewer events to send, the body ends cleanly.
    ResetAfter(u64),
    /// After this many events the body stops and the connection stays open, silent, until the
    /// client gives up (or the service stops, or 30 s pass; then it is reset).
    StallAfter(u64),
    /// This status (`503`, `500`, …) instead of the feed, with a JSON error body.
    ///
    /// # Panics
    /// The request's handler panics when this is not a status code (100 to 999).
    Status(u16),
}

impl std::fmt::Display for EventFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventFault::Pass => f.write_str("no fault"),
            EventFault::ResetAfter(k) => write!(f, "reset after {k} events"),
            EventFault::StallAfter(k) => write!(f, "stall after {k} events"),
            EventFault::Status(status) => write!(f, "{status}"),
        }
    }
}

/// One request for the event feed, as the service saw it: [`Service::event_requests`].
///
/// ```
/// use reattempt::testing::http::Service;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.publish_events(10);
///     reqwest::get(format!("{}/events?after=4", service.url())).await.unwrap().text().await.unwrap();
///     let seen = &service.event_requests()[0];
///     assert_eq!((seen.after, seen.status, seen.sent), (4, 200, 6));
/// }
/// ```
///
/// [`Service::event_requests`]: super::Service::event_requests
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventRequest {
    /// Its `after` parameter (0 when absent).
    pub after: u64,
    /// The fault it met.
    pub fault: EventFault,
    /// The status answered.
    pub status: u16,
    /// The events handed to the connection so far.
    pub sent: u64,
}

/// A request's record as the service keeps it: its body's counter is shared with the body.
#[derive(Debug)]
pub(super) struct EventLog {
    pub(super) seen: EventRequest,
    pub(super) sent: Arc<AtomicU64>,
}

impl EventLog {
    pub(super) fn snapshot(&self) -> EventRequest {
        EventRequest {
            sent: self.sent.load(SeqCst),
            ..self.seen.clone()
        }
    }
}

/// The feed in the service's state.
#[derive(Debug, Default)]
pub(super) struct Feed {
    /// Events `1..=published` exist.
    pub(super) published: u64,
    pub(super) faults: std::collections::VecDeque<EventFault>,
    pub(super) requests: Vec<EventLog>,
}
