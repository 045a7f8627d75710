//! What the service saw: one record per request, and how the service ended it.

use std::time::{Instant, SystemTime};

use super::Fault;

/// How the service ended one request, in [`Seen::outcome`].
///
/// ```
/// use reattempt::testing::http::{Fault, Outcome, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.script([Fault::Unavailable]);
///     let client = reqwest::Client::new();
///     for _ in 0..3 {
///         client
///             .post(format!("{}/messages", service.url()))
///             .header("Idempotency-Key", "k-1")
///             .json(&serde_json::json!({"to": "+15550100", "text": "hi"}))
///             .send()
///             .await
///             .unwrap();
///     }
///     let outcomes: Vec<Outcome> = service.seen().into_iter().map(|s| s.outcome).collect();
///     assert_eq!(outcomes, [Outcome::Status(503), Outcome::Applied, Outcome::Replayed]);
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Served, and the side effect was applied (a first request for its key, or no key).
    Applied,
    /// Served from the idempotency store: the stored answer, no new side effect.
    Replayed,
    /// Served without a side effect (a read).
    Read,
    /// Answered with this status without doing anything (a 503, a 429, a 400, a 422).
    Status(u16),
    /// No answer: hung until the client gave up.
    NoAnswer,
    /// The connection was reset.
    Reset,
}

/// One request, as the service saw it: [`Service::seen`], [`Service::seen_for`],
/// [`Service::seen_with_key`].
///
/// ```
/// use reattempt::testing::http::{Fault, Outcome, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap();
///     let seen = &service.seen()[0];
///     assert_eq!(seen.route, "GET /prices/tea");
///     assert_eq!(seen.subject.as_deref(), Some("tea"));
///     assert_eq!(seen.key, None);
///     assert_eq!(seen.fault, Fault::Pass);
///     assert_eq!(seen.outcome, Outcome::Read);
/// }
/// ```
///
/// [`Service::seen`]: super::Service::seen
/// [`Service::seen_for`]: super::Service::seen_for
/// [`Service::seen_with_key`]: super::Service::seen_with_key
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Seen {
    /// When it arrived.
    pub at: Instant,
    /// When it arrived, by the wall clock (which `Retry-After` dates are in).
    pub wall: SystemTime,
    /// `POST /charges`, `GET /prices/tea`, …
    pub route: String,
    /// The `order_id`, the `to` or the sku, when the request had one.
    pub subject: Option<String>,
    /// Its `Idempotency-Key` header.
    pub key: Option<String>,
    /// The fault it met.
    pub fault: Fault,
    /// How it ended (`Applied` also for a commit whose answer was lost or reset).
    pub outcome: Outcome,
    /// For a 429: the wall-clock instant before which a retry is too early.
    pub retry_not_before: Option<SystemTime>,
}
