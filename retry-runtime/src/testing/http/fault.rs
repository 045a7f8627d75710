//! What happens to one request: the faults a script is made of.

use std::time::Duration;

/// What happens to one request, drawn from a script ([`Service::script`],
/// [`Service::script_for`], [`Service::script_route`]) or the default ([`Service::set_default`]).
///
/// The faults that strike before the application (`Reset`, `Unavailable`, `Status`,
/// `RateLimited`, `Hinted`) do nothing; the others apply the request's side effect (once per
/// `Idempotency-Key`), except `Hang`.
///
/// ```
/// use std::time::Duration;
/// use reattempt::testing::http::{Fault, RetryAfter, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.script([
///         Fault::Status(502),
///         Fault::RateLimited(RetryAfter::Seconds(1)),
///         Fault::SlowBody(Duration::from_millis(600)),
///     ]);
///     let url = format!("{}/prices/tea", service.url());
///     assert_eq!(reqwest::get(&url).await.unwrap().status(), 502);
///     let limited = reqwest::get(&url).await.unwrap();
///     assert_eq!(limited.status(), 429);
///     assert_eq!(limited.headers()["retry-after"], "1");
///     // The status comes at once; the body takes 600 ms, past a 300 ms timeout for the whole.
///     let client = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
///     let slow = client.get(&url).send().await.unwrap();
///     assert_eq!(slow.status(), 200);
///     assert!(slow.text().await.unwrap_err().is_timeout());
/// }
/// ```
///
/// [`Service::script`]: super::Service::script
/// [`Service::script_for`]: super::Service::script_for
/// [`Service::script_route`]: super::Service::script_route
/// [`Service::set_default`]: super::Service::set_default
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// No fault: the request is served (and its side effect applied once per key).
    Pass,
    /// No answer and no side effect, until the client gives up (or the service stops): a hung
    /// upstream. Only a client-side timeout gets the caller out.
    Hang,
    /// The side effect is applied (and stored under the key), then no answer ever comes: the
    /// worst case for a non-idempotent call.
    LoseResponse,
    /// The side effect is applied, then the connection is reset instead of answering.
    CommitThenReset,
    /// The side effect is applied (and the real answer stored under the key), then the client
    /// gets this status instead: a gateway's 503 after its upstream acted ("upstream reset
    /// before headers"), the case where retrying a request without a key does it twice.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Outcome, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script([Fault::CommitThenStatus(503)]);
    ///     let client = reqwest::Client::new();
    ///     let charge = || {
    ///         client
    ///             .post(format!("{}/charges", service.url()))
    ///             .json(&serde_json::json!({"order_id": "o-1", "amount_cents": 1250}))
    ///             .send()
    ///     };
    ///     assert_eq!(charge().await.unwrap().status(), 503);
    ///     assert_eq!(service.seen()[0].outcome, Outcome::Applied);
    ///     assert_eq!(charge().await.unwrap().status(), 201); // no key: charged again
    ///     assert_eq!(service.effects("o-1"), 2);
    /// }
    /// ```
    ///
    /// # Panics
    /// As [`Fault::Status`], when this is not a status code.
    CommitThenStatus(u16),
    /// The side effect is applied (and stored under the key), then the answer comes only after
    /// this delay: a replica in a GC pause or behind a slow disk, the straggler hedging is for.
    /// A copy of the request sent meanwhile with the same key gets the stored answer at once.
    SlowAnswer(Duration),
    /// The side effect is applied and the status and headers come at once, but the body
    /// trickles in over this long (in a few pieces): a client whose timeout ends at the headers
    /// has its answer; one that reads the body within a shorter timeout does not.
    SlowBody(Duration),
    /// The connection is reset (TCP RST) before anything is done.
    Reset,
    /// `503 Service Unavailable` (a rolling deploy), nothing done.
    Unavailable,
    /// This status (`500`, `502`, `504`, `409`, …) with a JSON error body, nothing done.
    ///
    /// # Panics
    /// The request's handler panics (and the client sees the connection close) when this is
    /// not a status code (100 to 999).
    Status(u16),
    /// `429 Too Many Requests` with a `Retry-After` header, nothing done.
    RateLimited(RetryAfter),
    /// An error status with one header of the server's own (`x-amz-retry-after: 1500`,
    /// `x-should-retry: false`), nothing done.
    Hinted {
        /// The status.
        status: u16,
        /// The header's name (lower case).
        header: &'static str,
        /// Its value.
        value: &'static str,
    },
}

/// The form of a `Retry-After` header, in [`Fault::RateLimited`].
///
/// ```
/// use std::time::Duration;
/// use reattempt::testing::http::{Fault, RetryAfter, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.script([Fault::RateLimited(RetryAfter::Date(Duration::from_secs(2)))]);
///     let response = reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap();
///     let date = response.headers()["retry-after"].to_str().unwrap();
///     assert!(date.ends_with(" GMT"), "an HTTP-date: {date}");
///     let not_before = service.seen()[0].retry_not_before.expect("a 429 says when");
///     assert!(not_before > service.seen()[0].wall);
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: 1` (delta-seconds).
    Seconds(u64),
    /// `Retry-After: Sun, 06 Nov 1994 08:49:37 GMT`: at least this long from now, rounded up to
    /// the next whole second (the header's resolution).
    Date(Duration),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Pass => f.write_str("no fault"),
            Fault::Hang => f.write_str("hang"),
            Fault::LoseResponse => f.write_str("commit, then lose the response"),
            Fault::CommitThenReset => f.write_str("commit, then reset the connection"),
            Fault::CommitThenStatus(status) => write!(f, "commit, then answer {status}"),
            Fault::SlowAnswer(d) => write!(f, "commit, then answer after {d:?}"),
            Fault::SlowBody(d) => write!(f, "commit, then a body that takes {d:?}"),
            Fault::Reset => f.write_str("connection reset"),
            Fault::Unavailable => f.write_str("503"),
            Fault::Status(status) => write!(f, "{status}"),
            Fault::RateLimited(RetryAfter::Seconds(s)) => write!(f, "429, Retry-After: {s}"),
            Fault::RateLimited(RetryAfter::Date(d)) => write!(f, "429, Retry-After: now + {d:?}"),
            Fault::Hinted {
                status,
                header,
                value,
            } => write!(f, "{status}, {header}: {value}"),
        }
    }
}
