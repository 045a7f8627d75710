//! The service's event feed, scripted and read back: `GET /events?after=N`.

use super::event::{EventFault, EventLog, EventRequest};
use super::service::Service;

/// The event feed: `GET /events?after=N` sends the events published after `N`
/// ([`Service::publish_events`]) in order, one line each (see [`event_line`]: JSON carrying its
/// `seq`), then ends the body; `after` absent is `after=0`. A client that keeps the `seq` of the
/// last line it read resumes with `?after=` it and misses and repeats nothing.
///
/// [`event_line`]: super::event_line
impl Service {
    /// Publishes `count` more events; gives the `seq` of the last one (events are numbered from
    /// 1).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert_eq!(service.publish_events(3), 3);
    ///     assert_eq!(service.publish_events(2), 5);
    ///     let feed = reqwest::get(format!("{}/events?after=3", service.url())).await.unwrap();
    ///     assert_eq!(feed.text().await.unwrap().lines().count(), 2);
    /// }
    /// ```
    pub fn publish_events(&self, count: u64) -> u64 {
        let mut records = self.records();
        records.feed.published += count;
        records.feed.published
    }

    /// Appends faults to the feed's script: its next requests meet them in turn.
    ///
    /// ```
    /// use reattempt::testing::http::{EventFault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.publish_events(100);
    ///     service.script_events([EventFault::ResetAfter(10), EventFault::ResetAfter(10)]);
    ///     let get = |after: u64| reqwest::get(format!("{}/events?after={after}", service.url()));
    ///     assert!(get(0).await.unwrap().text().await.is_err());
    ///     assert!(get(10).await.unwrap().text().await.is_err());
    ///     assert_eq!(get(20).await.unwrap().text().await.unwrap().lines().count(), 80);
    /// }
    /// ```
    pub fn script_events(&self, faults: impl IntoIterator<Item = EventFault>) {
        self.records().feed.faults.extend(faults);
    }

    /// The requests for the feed, in order of arrival, with the events each has had written so
    /// far.
    ///
    /// ```
    /// use reattempt::testing::http::{EventFault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.publish_events(5);
    ///     service.script_events([EventFault::ResetAfter(2)]);
    ///     for after in [0, 2] {
    ///         let _ = reqwest::get(format!("{}/events?after={after}", service.url())).await.unwrap().text().await;
    ///     }
    ///     let seen: Vec<(u64, u64)> = service.event_requests().iter().map(|r| (r.after, r.sent)).collect();
    ///     assert_eq!(seen, [(0, 2), (2, 3)]);
    ///     assert_eq!(service.events_sent(), 5);
    /// }
    /// ```
    pub fn event_requests(&self) -> Vec<EventRequest> {
        self.records()
            .feed
            .requests
            .iter()
            .map(EventLog::snapshot)
            .collect()
    }

    /// The events written over all the feed's requests: those published plus those sent again,
    /// for a reader that read them all.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     service.publish_events(4);
    ///     reqwest::get(format!("{}/events", service.url())).await.unwrap().text().await.unwrap();
    ///     assert_eq!(service.events_sent(), 4);
    /// }
    /// ```
    pub fn events_sent(&self) -> u64 {
        self.event_requests().iter().map(|r| r.sent).sum()
    }

    /// Removes every scripted fault of the feed that no request has met yet.
    ///
    /// ```
    /// use reattempt::testing::http::{EventFault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script_events([EventFault::Status(503)]);
    ///     service.clear_event_script();
    ///     assert_eq!(reqwest::get(format!("{}/events", service.url())).await.unwrap().status(), 200);
    /// }
    /// ```
    pub fn clear_event_script(&self) {
        self.records().feed.faults.clear();
    }
}
