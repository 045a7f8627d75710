//! A resumable HTTP download through reqwest (feature `reqwest`): a [`RetryStream`] of the
//! body's chunks that re-opens a broken download with `Range` and `If-Range`, so that the bytes
//! reach the consumer once, in order, and all from one version of the object.
//!
//! The rules (RFC 9110 §13.1.5 and §14):
//! - **Only a strong validator joins two ranges** (§14.4): a strong `ETag`, or, when the
//!   response has no `ETag` at all, a `Last-Modified` at least one second before its `Date`
//!   (§8.8.2.2). A weak `ETag` (`W/"…"`) never validates a resume, and hides the date (a client
//!   that has an entity tag must not send a date in `If-Range`). Bytes delivered from a response
//!   without a strong validator are not resumed: the stream ends with
//!   [`DownloadError::NoValidator`] ("no strong validator") instead of re-opening.
//! - **The checkpoint** is ([bytes delivered](DownloadCheckpoint::delivered),
//!   [validator](DownloadCheckpoint::validator)) of the response whose bytes were delivered, and
//!   the object's complete length when it said one (its `Content-Length`).
//! - **A re-open** after `n > 0` bytes sends `Range: bytes=n-` and `If-Range:` the strong
//!   validator ([`Validator::if_range`]).
//! - **A 206** must say `Content-Range: bytes n-…`: another start is
//!   [`DownloadError::BadRange`]; another validator, or another complete length, is
//!   [`DownloadError::Changed`].
//! - **A 200** after `n > 0` bytes: if its validator differs from the checkpoint's (the object
//!   changed, or `If-Range` failed), the stream ends with [`DownloadError::Changed`] — never a
//!   file spliced from two versions; if it is the same (the server ignored `Range`), its first
//!   `n` bytes are skipped, so no byte is delivered twice.
//! - **A body that ends cleanly before the complete length** (a 206 of `bytes 400-499/1000` for
//!   `bytes=400-`) is [`DownloadError::Incomplete`], transient: resumed from what was
//!   delivered. An unknown length (`/*`, a chunked 200) ends where the body ends.
//! - **A 416** whose `Content-Range: bytes */len` says `len == n`, of the length recorded and
//!   with no other validator: everything was delivered; the stream ends cleanly. A 416 of
//!   another `ETag` or another length is [`DownloadError::Changed`].
//! - **Bytes as sent**: `Range` counts the representation's bytes as the server sends them, so
//!   the client must not decode bodies (reqwest's default features decode nothing; with its
//!   `gzip`, `brotli`, `zstd` or `deflate` on, build the client with `.no_gzip()` and the like).
//!   Each open asks `Accept-Encoding: identity` unless the request has its own (kept: a client
//!   that does not decode delivers the encoded bytes, which `Range` counts too). A server may
//!   encode anyway (an object stored gzipped): a decoding client then strips the answer's
//!   `Content-Length`, and a 206 without one makes the download re-read the whole object under
//!   its validator and skip what was delivered, at this resume and the later ones — every byte
//!   fetched again, none spliced.
//! - **Other statuses** are [`DownloadError::Status`], transient as `StatusCode` is (408, 429,
//!   500, 502, 503, 504), with the server's `Retry-After`.
//! - **Memory**: a chunk is handed on as hyper reads it (a skip slices it, without a copy):
//!   the download never holds more than one chunk.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::Body as _;

use crate::classify::{Effect, ErrorClass, Transient, transient};
use crate::convert::{FromBreakerOpen, FromElapsed};
use crate::drivers::stream::RetryStream;
use crate::engine::hooks::{DelayFor, FnHooks, Unset};
use crate::error::{BreakerOpen, Elapsed};
use crate::schedule::policy::RetryPolicy;

/// The future of one open: the request sent and its response checked. Named in [`Download`]'s
/// type, as a field holding a download names it.
///
/// ```
/// use reattempt::http::{Download, DownloadCheckpoint, OpenDownload};
///
/// // A download kept in a struct: its closures are named by the generic parameters.
/// struct Job<'p, Open, Adv> {
///     chunks: Download<'p, Open, Adv>,
/// }
/// fn job<'p, Open, Adv>(chunks: Download<'p, Open, Adv>) -> Job<'p, Open, Adv>
/// where
///     Open: FnMut(DownloadCheckpoint) -> OpenDownload,
///     Adv: FnMut(&mut DownloadCheckpoint, &bytes::Bytes),
/// {
///     Job { chunks }
/// }
/// let policy = reattempt::RetryPolicy::builder().build().unwrap();
/// let client = reqwest::Client::new();
/// let kept = job(reattempt::http::download(&policy, &client, "http://127.0.0.1:9/a"));
/// assert_eq!(kept.chunks.checkpoint().delivered(), 0);
/// ```
pub type OpenDownload = Pin<Box<dyn Future<Output = Result<DownloadChunks, DownloadError>> + Send>>;

/// The hooks a download starts with: resumes after the errors [`Transient`] calls transient
/// ([`transient`](crate::transient)), and waits at least what a server's `Retry-After` asks
/// ([`DownloadError::retry_after`]); `.retry_if(..)` and `.retry_after(..)` replace them.
///
/// ```
/// use reattempt::http::DownloadError;
///
/// let policy = reattempt::RetryPolicy::builder().build().unwrap();
/// let client = reqwest::Client::new();
/// // Resume only after a stall or a 503, not after a reset.
/// let chunks = reattempt::http::download(&policy, &client, "http://127.0.0.1:9/a").retry_if(
///     |e: &DownloadError| matches!(e, DownloadError::Timeout(_) | DownloadError::Status { .. }),
/// );
/// # drop(chunks);
/// ```
pub type DownloadHooks = FnHooks<
    (),
    DownloadError,
    fn(&DownloadError) -> bool,
    Unset,
    DelayFor<fn(&DownloadError) -> Option<Duration>, Unset>,
>;

/// What [`download`] and [`download_with`] give: a [`RetryStream`] of the body's chunks, whose
/// settings (`idle_timeout`, `budget`, `circuit_breaker`, `retry_after`, `recover`, …) are a
/// stream's; `.opened().await` returns the first open's error (a 404, after retrying a 503) up
/// front, as `client.get(..).send().await?` would. `Open` and `Adv` are closures of the
/// download's own.
///
/// ```
/// use std::time::Duration;
/// use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy};
/// use reattempt::http::DownloadError;
///
/// let policy = RetryPolicy::builder().max_attempts(5).build().unwrap();
/// let budget = RetryBudget::builder().build().unwrap();
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let client = reqwest::Client::new();
/// let chunks = reattempt::http::download(&policy, &client, "http://127.0.0.1:9/a")
///     .idle_timeout(Duration::from_secs(10))
///     .budget(&budget)
///     .circuit_breaker(&breaker)
///     .retry_if(|e: &DownloadError| !matches!(e, DownloadError::Status { .. }));
/// assert_eq!(chunks.resumes(), 0);
/// ```
pub type Download<'p, Open, Adv> = RetryStream<
    'p,
    DownloadCheckpoint,
    Open,
    Adv,
    OpenDownload,
    DownloadChunks,
    Bytes,
    DownloadError,
    DownloadHooks,
>;

/// Downloads `url` with `client`, resumed under `policy` with `Range` and `If-Range` after a
/// failure mid-body; see [`download_with`] for the rules, and the module's docs.
///
/// ```
/// use futures_util::StreamExt;
/// use reattempt::RetryPolicy;
/// use reattempt::testing::http::{ObjectFault, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     let object = service.put_object("data.bin", 1 << 20);
///     service.script_object("data.bin", [ObjectFault::ResetAt(300_000)]);
///
///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
///     let client = reqwest::Client::new();
///     let url = format!("{}/objects/data.bin", service.url());
///     let mut chunks = reattempt::http::download(&policy, &client, &url);
///     let mut file = Vec::new();
///     while let Some(chunk) = chunks.next().await {
///         file.extend_from_slice(&chunk.unwrap());
///     }
///     assert_eq!(file, object.to_vec());
///     assert_eq!(chunks.resumes(), 1);
///     assert_eq!(service.object_requests("data.bin")[1].range.as_deref(), Some("bytes=300000-"));
/// }
/// ```
pub fn download<'p>(
    policy: &'p RetryPolicy,
    client: &reqwest::Client,
    url: &str,
) -> Download<
    'p,
    impl FnMut(DownloadCheckpoint) -> OpenDownload + use<>,
    impl FnMut(&mut DownloadCheckpoint, &Bytes) + use<>,
> {
    let (client, url) = (client.clone(), url.to_owned());
    download_with(policy, move || client.get(&url))
}

/// Downloads what `request()` asks for (a `GET` made afresh for each open, with the headers and
/// settings of your choice), resumed under `policy` after a failure mid-body.
///
/// The rule: the chunks delivered are the object's bytes, each once and in order, all from the
/// version whose first bytes were delivered; a changed object ends the stream with
/// [`DownloadError::Changed`], a server that ignores `Range` is read past what was delivered.
/// Each re-open sends `Range: bytes=<delivered>-` and `If-Range` with the strong validator (a
/// strong `ETag`, else with no `ETag` a `Last-Modified` a second before its `Date`); without
/// one, the download does not resume ([`DownloadError::NoValidator`]). The stream resumes after
/// transient errors (a reset, a body cut short or ending before the object's length, a 503, an
/// [`idle_timeout`](RetryStream::idle_timeout)) and ends with the others; a resume waits at
/// least what the server's `Retry-After` asks. Each open asks `Accept-Encoding: identity`
/// unless `request()` sets its own; the client must not decode bodies (see the module's docs).
///
/// ```
/// use std::time::Duration;
/// use futures_util::StreamExt;
/// use reattempt::RetryPolicy;
/// use reattempt::http::DownloadError;
/// use reattempt::testing::http::Service;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     let v1 = service.put_object("report.csv", 200_000);
///     service.replace_object_after("report.csv", 1);
///     service.script_object("report.csv", [reattempt::testing::http::ObjectFault::ResetAt(100_000)]);
///
///     let policy = RetryPolicy::builder().max_attempts(3).delay(Duration::from_millis(1)).build().unwrap();
///     let client = reqwest::Client::new();
///     let url = format!("{}/objects/report.csv", service.url());
///     let mut chunks = reattempt::http::download_with(&policy, || {
///         client.get(&url).header("Authorization", "Bearer t0ken")
///     });
///     let mut file = Vec::new();
///     let error = loop {
///         match chunks.next().await {
///             Some(Ok(chunk)) => file.extend_from_slice(&chunk),
///             Some(Err(e)) => break e,
///             None => panic!("a changed object is no clean end"),
///         }
///     };
///     assert!(matches!(error, DownloadError::Changed { delivered: 100_000, .. }), "{error}");
///     assert_eq!(file, v1.range(0..100_000), "only the old version's bytes");
/// }
/// ```
pub fn download_with<F>(
    policy: &RetryPolicy,
    mut request: F,
) -> Download<
    '_,
    impl FnMut(DownloadCheckpoint) -> OpenDownload + use<F>,
    impl FnMut(&mut DownloadCheckpoint, &Bytes) + use<F>,
>
where
    F: FnMut() -> reqwest::RequestBuilder,
{
    // The validator and length of the response being read from the start: the checkpoint
    // takes them with its first byte (an open cannot write the checkpoint; `advance` can).
    let shared = Arc::new(Mutex::new(Shared::default()));
    let seen = Arc::clone(&shared);
    let open = move |checkpoint: DownloadCheckpoint| -> OpenDownload {
        let builder = request();
        Box::pin(open(builder, checkpoint, Arc::clone(&shared)))
    };
    let advance = move |checkpoint: &mut DownloadCheckpoint, chunk: &Bytes| {
        if checkpoint.delivered == 0 && !chunk.is_empty() {
            let first = seen.lock().unwrap_or_else(PoisonError::into_inner);
            checkpoint.validator.clone_from(&first.validator);
            checkpoint.length = first.length;
        }
        checkpoint.delivered += chunk.len() as u64;
    };
    policy
        .retry_stream(open)
        .resume(DownloadCheckpoint::default(), advance)
        .name("download")
        .retry_if(transient::<DownloadError> as fn(&DownloadError) -> bool)
        .retry_after(DownloadError::retry_after as fn(&DownloadError) -> Option<Duration>)
}

/// Where a download stands: the bytes delivered, and the validator of the version they are
/// from ([`RetryStream::checkpoint`]).
///
/// ```
/// use futures_util::StreamExt;
/// use reattempt::RetryPolicy;
/// use reattempt::testing::http::Service;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     let object = service.put_object("a", 1_000);
///     let policy = RetryPolicy::builder().build().unwrap();
///     let client = reqwest::Client::new();
///     let url = format!("{}/objects/a", service.url());
///     let mut chunks = reattempt::http::download(&policy, &client, &url);
///     while let Some(chunk) = chunks.next().await {
///         chunk.unwrap();
///     }
///     assert_eq!(chunks.checkpoint().delivered(), 1_000);
///     let validator = chunks.checkpoint().validator().unwrap();
///     assert_eq!(validator.etag(), Some(object.etag().as_str()));
///     assert_eq!(validator.if_range(), Some(object.etag().as_str()));
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownloadCheckpoint {
    delivered: u64,
    validator: Option<Validator>,
    /// The object's complete length, when the response the bytes came from said it.
    length: Option<u64>,
}

impl DownloadCheckpoint {
    /// The bytes handed to the consumer so far.
    ///
    /// ```
    /// let checkpoint = reattempt::http::DownloadCheckpoint::default();
    /// assert_eq!(checkpoint.delivered(), 0);
    /// ```
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The validators of the response the bytes delivered came from (`None` before the first
    /// byte); a resume needs a strong one ([`Validator::if_range`]).
    ///
    /// ```
    /// let checkpoint = reattempt::http::DownloadCheckpoint::default();
    /// assert_eq!(checkpoint.validator(), None);
    /// ```
    pub fn validator(&self) -> Option<&Validator> {
        self.validator.as_ref()
    }
}

/// A response's validators: its `ETag` and `Last-Modified` headers, as sent, and whether one of
/// them is **strong**, the only kind that may join two ranges into one file (RFC 9110 §13.1.5,
/// §14.4): a strong `ETag` (not `W/"…"`), or, when there is no `ETag` at all, a `Last-Modified`
/// at least one second before the response's `Date` (§8.8.2.2; a date within the second of the
/// answer may name two versions). A weak `ETag` with a date is not strong: a client that has an
/// entity tag must not send a date in `If-Range`.
///
/// ```
/// use reattempt::http::Validator;
///
/// let mut headers = http::HeaderMap::new();
/// headers.insert("etag", "W/\"v1\"".parse().unwrap());
/// headers.insert("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT".parse().unwrap());
/// headers.insert("date", "Fri, 02 Jan 2026 00:00:00 GMT".parse().unwrap());
/// let validator = Validator::of(&headers).unwrap();
/// // A weak ETag cannot validate a range, and hides the date: no resume.
/// assert_eq!(validator.if_range(), None);
///
/// headers.remove("etag");
/// let dated = Validator::of(&headers).unwrap();
/// assert_eq!(dated.if_range(), Some("Thu, 01 Jan 2026 00:00:00 GMT"));
/// assert_eq!(Validator::of(&http::HeaderMap::new()), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator {
    etag: Option<String>,
    last_modified: Option<String>,
    /// `Last-Modified` is at least one second before the response's `Date` (§8.8.2.2).
    date_is_strong: bool,
}

impl Validator {
    /// The validators in `headers` (`None` when there is neither `ETag` nor `Last-Modified`),
    /// the date judged strong only when `headers` has a `Date` at least one second after it.
    ///
    /// ```
    /// use reattempt::http::Validator;
    ///
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT".parse().unwrap());
    /// headers.insert("date", "Thu, 01 Jan 2026 00:00:00 GMT".parse().unwrap());
    /// // Modified within the second of the answer: weak, so no resume.
    /// assert_eq!(Validator::of(&headers).unwrap().if_range(), None);
    /// headers.insert("etag", "\"v1\"".parse().unwrap());
    /// assert_eq!(Validator::of(&headers).unwrap().if_range(), Some("\"v1\""));
    /// ```
    pub fn of(headers: &HeaderMap) -> Option<Validator> {
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &http::HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let date = |name| text(name).and_then(|d| httpdate::parse_http_date(&d).ok());
        let date_is_strong = match (date(header::LAST_MODIFIED), date(header::DATE)) {
            (Some(modified), Some(sent)) => sent
                .duration_since(modified)
                .is_ok_and(|d| d >= Duration::from_secs(1)),
            _ => false,
        };
        let validator = Validator {
            etag: text(header::ETAG),
            last_modified: text(header::LAST_MODIFIED),
            date_is_strong,
        };
        (validator.etag.is_some() || validator.last_modified.is_some()).then_some(validator)
    }

    /// The `ETag`, quotes included (and `W/` for a weak one).
    ///
    /// ```
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("etag", "\"v1\"".parse().unwrap());
    /// let validator = reattempt::http::Validator::of(&headers).unwrap();
    /// assert_eq!(validator.etag(), Some("\"v1\""));
    /// ```
    pub fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    /// The `Last-Modified` date, as sent.
    ///
    /// ```
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT".parse().unwrap());
    /// let validator = reattempt::http::Validator::of(&headers).unwrap();
    /// assert_eq!(validator.last_modified(), Some("Thu, 01 Jan 2026 00:00:00 GMT"));
    /// assert_eq!(validator.etag(), None);
    /// ```
    pub fn last_modified(&self) -> Option<&str> {
        self.last_modified.as_deref()
    }

    /// The strong validator, which a resume sends as `If-Range`: the `ETag` if it is strong;
    /// with no `ETag` at all, a strong `Last-Modified` date; otherwise `None`, and bytes
    /// delivered from this response cannot be resumed ([`DownloadError::NoValidator`]).
    ///
    /// ```
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("etag", "\"v1\"".parse().unwrap());
    /// headers.insert("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT".parse().unwrap());
    /// let validator = reattempt::http::Validator::of(&headers).unwrap();
    /// assert_eq!(validator.if_range(), Some("\"v1\""));
    /// ```
    pub fn if_range(&self) -> Option<&str> {
        match &self.etag {
            Some(etag) => Some(etag.as_str()).filter(|e| !e.starts_with("W/")),
            None => self
                .last_modified
                .as_deref()
                .filter(|_| self.date_is_strong),
        }
    }

    /// Whether `now` names the same version, by this one's strong validator compared strongly
    /// (a strong `ETag` equal, or with no `ETag` the same strong date); without a strong
    /// validator, or with it missing from `now`, it is never the same.
    fn same(&self, now: Option<&Validator>) -> bool {
        let (Some(strong), Some(now)) = (self.if_range(), now) else {
            return false;
        };
        match &self.etag {
            Some(_) => now.etag.as_deref() == Some(strong),
            None => now.last_modified.as_deref() == Some(strong),
        }
    }

    /// Whether `now` (a 416's validators) names another version: it carries the kind of
    /// validator this one is checked by, with another value. A 416 need not carry any.
    fn contradicts(&self, now: Option<&Validator>) -> bool {
        let kind = |v: &Validator| match &self.etag {
            Some(_) => v.etag.is_some(),
            None => v.last_modified.is_some(),
        };
        now.is_some_and(|now| kind(now) && !self.same(Some(now)))
    }
}

/// Why a download failed, or ended.
///
/// | variant | transient (resumed) | class, effect |
/// |---|---|---|
/// | `Http` | as `reqwest::Error` (a reset, a body cut short, a connect error: yes) | its own |
/// | `Status` | as its `StatusCode` (408, 429, 500, 502, 503, 504) | its own (429: throttling) |
/// | `Timeout` (an idle limit, the open's `timeout`) | yes | timeout, unknown |
/// | `Incomplete` (a body that ended before the object's length) | yes | transient, unstated |
/// | `Changed`, `BadRange`, `NoValidator` (no strong validator), `Rejected` | no | — |
///
/// ```
/// use http::StatusCode;
/// use reattempt::Transient;
/// use reattempt::http::DownloadError;
///
/// let busy = DownloadError::Status { status: StatusCode::SERVICE_UNAVAILABLE, retry_after: None };
/// assert!(busy.is_transient());
/// let gone = DownloadError::Status { status: StatusCode::NOT_FOUND, retry_after: None };
/// assert!(!gone.is_transient());
/// assert!(reattempt::Elapsed::new().is_transient());
/// // A body that ended before the object's length is resumed from where it ended.
/// assert!(DownloadError::Incomplete { delivered: 500, expected: 1_000 }.is_transient());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DownloadError {
    /// The request or the body failed (connection refused or reset, body cut short, …).
    Http(reqwest::Error),
    /// The server answered with this status instead of the object (or a part of it).
    Status {
        /// The status.
        status: StatusCode,
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// The object changed after bytes of it were delivered: a resume got another version
    /// (a 200 or a 206 with another validator). The bytes delivered are all of the old one.
    Changed {
        /// The bytes delivered, all from the old version.
        delivered: u64,
        /// The validator of the old version.
        was: Option<Validator>,
        /// The validator of the answer that ended the download.
        now: Option<Validator>,
    },
    /// A 206 whose `Content-Range` does not start where the download stands (or none).
    BadRange {
        /// The offset asked for.
        expected: u64,
        /// The `Content-Range` received.
        content_range: Option<String>,
    },
    /// Bytes were delivered from a response without a **strong** validator (a strong `ETag`, or
    /// with no `ETag` a `Last-Modified` at least a second before its `Date`; see [`Validator`]):
    /// a resume could not prove it gets the same bytes, so the download does not resume.
    NoValidator {
        /// The bytes delivered.
        delivered: u64,
    },
    /// A body ended cleanly before the object's complete length (a `200`'s `Content-Length`,
    /// a `206`'s `Content-Range: bytes …/len`), as a `206` answering less than asked does: the
    /// download resumes from the bytes delivered. An unknown length (`/*`, a chunked `200`)
    /// ends where the body does.
    Incomplete {
        /// Where the object's bytes stand: the bytes delivered.
        delivered: u64,
        /// The object's complete length.
        expected: u64,
    },
    /// An idle limit or the open's `timeout` ran out ([`FromElapsed`]).
    Timeout(Elapsed),
    /// A circuit breaker turned the download away ([`FromBreakerOpen`]).
    Rejected(BreakerOpen),
}

impl DownloadError {
    /// The server's requested delay (a 429's or a 503's `Retry-After`), for
    /// `.retry_after(..)`; a download waits for it by default.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::http::DownloadError;
    ///
    /// let limited = DownloadError::Status {
    ///     status: http::StatusCode::TOO_MANY_REQUESTS,
    ///     retry_after: Some(Duration::from_secs(2)),
    /// };
    /// assert_eq!(limited.retry_after(), Some(Duration::from_secs(2)));
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            DownloadError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl std::fmt::Display for DownloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DownloadError::Http(e) => write!(f, "download failed: {e}"),
            DownloadError::Status { status, .. } => write!(f, "download answered {status}"),
            DownloadError::Changed {
                delivered,
                was,
                now,
                ..
            } => write!(
                f,
                "the object changed after {delivered} bytes were delivered (was {:?}, now {:?})",
                was.as_ref().and_then(Validator::if_range),
                now.as_ref().and_then(Validator::if_range),
            ),
            DownloadError::BadRange {
                expected,
                content_range,
            } => write!(
                f,
                "a partial answer that does not start at byte {expected} (Content-Range: {content_range:?})"
            ),
            DownloadError::NoValidator { delivered } => write!(
                f,
                "cannot resume after {delivered} bytes: the response had no strong validator \
                 (a strong ETag, or a Last-Modified a second before its Date)"
            ),
            DownloadError::Incomplete {
                delivered,
                expected,
            } => write!(
                f,
                "the body ended after {delivered} of the object's {expected} bytes"
            ),
            DownloadError::Timeout(e) => write!(f, "download stalled: {e}"),
            DownloadError::Rejected(e) => write!(f, "download rejected: {e}"),
        }
    }
}

impl std::error::Error for DownloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DownloadError::Http(e) => Some(e),
            DownloadError::Timeout(e) => Some(e),
            DownloadError::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

impl Transient for DownloadError {
    fn is_transient(&self) -> bool {
        match self {
            DownloadError::Http(e) => e.is_transient(),
            DownloadError::Status { status, .. } => status.is_transient(),
            DownloadError::Timeout(e) => e.is_transient(),
            DownloadError::Incomplete { .. } => true,
            _ => false,
        }
    }

    fn is_timeout(&self) -> bool {
        match self {
            DownloadError::Http(e) => Transient::is_timeout(e),
            DownloadError::Timeout(_) => true,
            _ => false,
        }
    }

    fn class(&self) -> ErrorClass {
        match self {
            DownloadError::Http(e) => e.class(),
            DownloadError::Status { status, .. } => status.class(),
            DownloadError::Timeout(_) => ErrorClass::Timeout,
            _ => ErrorClass::Transient,
        }
    }

    fn effect(&self) -> Effect {
        match self {
            DownloadError::Http(e) => e.effect(),
            DownloadError::Status { status, .. } => status.effect(),
            DownloadError::Timeout(e) => e.effect(),
            _ => Effect::Unstated,
        }
    }
}

/// A stalled download (its `idle_timeout`) or a timed-out open.
impl FromElapsed for DownloadError {
    fn from_elapsed(elapsed: Elapsed) -> Self {
        DownloadError::Timeout(elapsed)
    }
}

/// A download an open breaker turned away.
impl FromBreakerOpen for DownloadError {
    fn from_breaker_open(open: BreakerOpen) -> Self {
        DownloadError::Rejected(open)
    }
}

/// One response's body as a stream of chunks, its first `skip` bytes left out (a server that
/// ignored `Range`): what each open of a [`Download`] gives. Each chunk is handed on as hyper
/// read it (a skip slices it, without a copy).
///
/// ```
/// use futures_util::StreamExt;
/// use reattempt::RetryPolicy;
/// use reattempt::testing::http::Service;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.put_object("a", 300_000);
///     let policy = RetryPolicy::builder().build().unwrap();
///     let client = reqwest::Client::new();
///     let url = format!("{}/objects/a", service.url());
///     let sizes: Vec<usize> = reattempt::http::download(&policy, &client, &url)
///         .map(|chunk| chunk.unwrap().len())
///         .collect()
///         .await;
///     assert_eq!(sizes.iter().sum::<usize>(), 300_000);
/// }
/// ```
#[derive(Debug)]
pub struct DownloadChunks {
    body: reqwest::Body,
    skip: u64,
    expected: u64,
    /// Where the body stands in the object (its start, plus every byte read, skipped or not).
    at: u64,
    /// The object's complete length, when known: a clean end before it is `Incomplete`.
    end: Option<u64>,
}

impl DownloadChunks {
    /// A body that gives nothing: everything was delivered.
    fn finished(at: u64) -> DownloadChunks {
        let empty = http::Response::new(reqwest::Body::from(Bytes::new()));
        DownloadChunks {
            body: empty.into_body(),
            skip: 0,
            expected: at,
            at,
            end: None,
        }
    }
}

impl Stream for DownloadChunks {
    type Item = Result<Bytes, DownloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let frame = match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) if self.skip > 0 => {
                    // Shorter than what was delivered: not the version it claimed to be.
                    let expected = self.expected;
                    self.skip = 0;
                    return Poll::Ready(Some(Err(DownloadError::BadRange {
                        expected,
                        content_range: None,
                    })));
                }
                Poll::Ready(None) => {
                    // A clean end short of the known length (a 206 answering less than asked)
                    // is a cut like any other, resumed from what was delivered.
                    return Poll::Ready(match self.end.take() {
                        Some(end) if self.at < end => Some(Err(DownloadError::Incomplete {
                            delivered: self.at,
                            expected: end,
                        })),
                        _ => None,
                    });
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Some(Err(DownloadError::Http(e))));
                }
                Poll::Ready(Some(Ok(frame))) => frame,
            };
            let Ok(mut data) = frame.into_data() else {
                continue; // trailers
            };
            self.at += data.len() as u64;
            if self.skip > 0 {
                let skipped = self.skip.min(data.len() as u64);
                self.skip -= skipped;
                data = data.slice(usize::try_from(skipped).unwrap_or(data.len())..);
            }
            if !data.is_empty() {
                return Poll::Ready(Some(Ok(data)));
            }
        }
    }
}

/// What the opens of one download share: what the first response said (the checkpoint takes it
/// with its first byte), and whether the client decodes bodies (so `Range` cannot be used).
#[derive(Debug, Default)]
struct Shared {
    validator: Option<Validator>,
    length: Option<u64>,
    decoded: bool,
}

/// Sends one open's request (`Accept-Encoding: identity` unless it has one; `Range` and
/// `If-Range` after the first bytes) and checks its answer against the checkpoint.
async fn open(
    request: reqwest::RequestBuilder,
    checkpoint: DownloadCheckpoint,
    shared: Arc<Mutex<Shared>>,
) -> Result<DownloadChunks, DownloadError> {
    let at = checkpoint.delivered;
    let strong = checkpoint.validator.as_ref().and_then(Validator::if_range);
    if at > 0 && strong.is_none() {
        return Err(DownloadError::NoValidator { delivered: at });
    }
    let (client, request) = request.build_split();
    let mut request = request.map_err(DownloadError::Http)?;
    // `Range` counts the bytes of the representation as sent: ask for it unencoded. A user's
    // own `Accept-Encoding` is kept: with a client that does not decode, the bytes delivered
    // are the encoded ones, which `Range` counts as well.
    let headers = request.headers_mut();
    if !headers.contains_key(header::ACCEPT_ENCODING) {
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
    }
    let whole = request.try_clone();
    let decoding = lock(&shared).decoded;
    if let (Some(strong), false) = (strong.filter(|_| at > 0), decoding) {
        let headers = request.headers_mut();
        headers.insert(header::RANGE, header_value(&format!("bytes={at}-"), at)?);
        headers.insert(header::IF_RANGE, header_value(strong, at)?);
    }
    let mut response = client.execute(request).await.map_err(DownloadError::Http)?;
    if response.status() == StatusCode::PARTIAL_CONTENT
        && !response.headers().contains_key(header::CONTENT_LENGTH)
    {
        // A 206 without `Content-Length`: the client decoded it (reqwest strips the header
        // when it does), so the bytes delivered count decoded bytes and a range of encoded ones
        // cannot follow them. Re-read the whole object under the validator and skip what was
        // delivered, now and at every later resume: costly, never spliced.
        lock(&shared).decoded = true;
        let Some(whole) = whole else {
            return Err(DownloadError::BadRange {
                expected: at,
                content_range: content_range(response.headers()).map(str::to_owned),
            });
        };
        response = client.execute(whole).await.map_err(DownloadError::Http)?;
    }
    check(response, &checkpoint, &shared)
}

/// Checks one open's answer against the checkpoint: what to skip, and where the body ends.
fn check(
    response: reqwest::Response,
    checkpoint: &DownloadCheckpoint,
    shared: &Mutex<Shared>,
) -> Result<DownloadChunks, DownloadError> {
    let at = checkpoint.delivered;
    let status = response.status();
    let headers = response.headers();
    let now = Validator::of(headers);
    let was = checkpoint.validator.as_ref();
    let same = was.is_some_and(|v| v.same(now.as_ref()));
    let changed = |now: Option<Validator>| DownloadError::Changed {
        delivered: at,
        was: checkpoint.validator.clone(),
        now,
    };
    let content_length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (skip, start, end) = match status {
        StatusCode::OK if at == 0 => (0, 0, content_length),
        StatusCode::OK => {
            if !same {
                return Err(changed(now));
            }
            // The server ignored `Range`: read past what was delivered.
            (at, 0, content_length.or(checkpoint.length))
        }
        StatusCode::PARTIAL_CONTENT => {
            let content_range = content_range(headers);
            if content_range.and_then(range_start) != Some(at) {
                return Err(DownloadError::BadRange {
                    expected: at,
                    content_range: content_range.map(str::to_owned),
                });
            }
            let length = content_range.and_then(range_length);
            if at > 0 && (!same || differ(length, checkpoint.length)) {
                return Err(changed(now));
            }
            (0, at, length.or(checkpoint.length))
        }
        StatusCode::RANGE_NOT_SATISFIABLE if at > 0 => {
            // Only the version delivered may end a download here: a 416 of another validator
            // or another length is a change, not a clean end.
            let length = complete_length(headers);
            if was.is_some_and(|v| v.contradicts(now.as_ref())) || differ(length, checkpoint.length)
            {
                return Err(changed(now));
            }
            if length == Some(at) {
                // Everything was delivered; the connection broke before its clean end.
                return Ok(DownloadChunks::finished(at));
            }
            return Err(status_error(status, headers));
        }
        _ => return Err(status_error(status, headers)),
    };
    if at == 0 {
        let mut first = lock(shared);
        first.validator = now;
        first.length = end;
    }
    Ok(DownloadChunks {
        body: http::Response::from(response).into_body(),
        skip,
        expected: at,
        at: start,
        end,
    })
}

/// Two known lengths that differ (an unknown one differs from none).
fn differ(a: Option<u64>, b: Option<u64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a != b)
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A header of ours: digits, or a validator the server sent as a (visible ASCII) header, so
/// it cannot fail; if it did, the validator could not be sent, and there is no resume.
fn header_value(text: &str, delivered: u64) -> Result<HeaderValue, DownloadError> {
    HeaderValue::from_str(text).map_err(|_| DownloadError::NoValidator { delivered })
}

fn status_error(status: StatusCode, headers: &HeaderMap) -> DownloadError {
    DownloadError::Status {
        status,
        retry_after: crate::classify::hints::retry_after(headers),
    }
}

fn content_range(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
}

/// The first byte of `Content-Range: bytes N-M/L`.
fn range_start(content_range: &str) -> Option<u64> {
    let range = content_range.trim().strip_prefix("bytes ")?;
    let (first, _) = range.split_once('-')?;
    first.trim().parse().ok()
}

/// The complete length of `Content-Range: bytes N-M/L` (`None` for `/*`).
fn range_length(content_range: &str) -> Option<u64> {
    let (_, length) = content_range
        .trim()
        .strip_prefix("bytes ")?
        .split_once('/')?;
    length.trim().parse().ok()
}

/// The length of a 416's `Content-Range: bytes */L`.
fn complete_length(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(header::CONTENT_RANGE)?.to_str().ok()?;
    value.trim().strip_prefix("bytes */")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_read_as_rfc_9110_writes_them() {
        assert_eq!(range_start("bytes 100-199/200"), Some(100));
        assert_eq!(range_start("bytes */200"), None);
        assert_eq!(range_start("items 1-2/3"), None);
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_RANGE, "bytes */512".parse().unwrap());
        assert_eq!(complete_length(&headers), Some(512));
        assert_eq!(range_length("bytes 100-199/200"), Some(200));
        assert_eq!(range_length("bytes 100-199/*"), None);
    }

    #[test]
    fn a_strong_etag_validates_before_a_date_and_a_missing_one_is_a_change() {
        let v = |etag: Option<&str>, date: Option<&str>| Validator {
            etag: etag.map(str::to_owned),
            last_modified: date.map(str::to_owned),
            date_is_strong: true,
        };
        let strong = v(Some("\"a\""), Some("d1"));
        assert_eq!(strong.if_range(), Some("\"a\""));
        assert!(strong.same(Some(&v(Some("\"a\""), Some("d2")))));
        assert!(!strong.same(Some(&v(Some("\"b\""), Some("d1")))));
        assert!(!strong.same(Some(&v(None, Some("d1")))));
        assert!(!strong.same(None));
        let dated = v(None, Some("d1"));
        assert_eq!(dated.if_range(), Some("d1"));
        assert!(dated.same(Some(&v(Some("\"x\""), Some("d1")))));
        assert!(!dated.same(Some(&v(None, Some("d2")))));
    }

    #[test]
    fn only_a_strong_validator_resumes_and_a_weak_etag_hides_the_date() {
        let of = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_static(value));
            }
            Validator::of(&headers).unwrap()
        };
        let (modified, later) = (
            "Thu, 01 Jan 2026 00:00:00 GMT",
            "Thu, 01 Jan 2026 00:00:01 GMT",
        );
        let weak = of(&[("etag", "W/\"a\"")]);
        assert_eq!(weak.if_range(), None);
        assert!(
            !weak.same(Some(&weak)),
            "a weak tag never names the same bytes"
        );
        let weak_dated = of(&[
            ("etag", "W/\"a\""),
            ("last-modified", modified),
            ("date", later),
        ]);
        assert_eq!(
            weak_dated.if_range(),
            None,
            "with an entity tag, no date in If-Range"
        );
        assert!(!weak_dated.same(Some(&weak_dated)));
        let same_second = of(&[("last-modified", modified), ("date", modified)]);
        assert_eq!(same_second.if_range(), None);
        assert_eq!(
            of(&[("last-modified", modified)]).if_range(),
            None,
            "no Date: weak"
        );
        let dated = of(&[("last-modified", modified), ("date", later)]);
        assert_eq!(dated.if_range(), Some(modified));
        assert!(
            dated.same(Some(&same_second)),
            "the old date is strong; the new one equal"
        );
        // A 416 need not carry validators; one of the same kind and another value is a change.
        let strong = of(&[("etag", "\"a\"")]);
        assert!(!strong.contradicts(None));
        assert!(!strong.contradicts(Some(&dated)));
        assert!(strong.contradicts(Some(&of(&[("etag", "\"b\"")]))));
        assert!(!strong.contradicts(Some(&strong)));
    }

    #[test]
    fn only_transport_failures_statuses_and_stalls_resume() {
        let status = |code| DownloadError::Status {
            status: StatusCode::from_u16(code).unwrap(),
            retry_after: None,
        };
        assert!(status(503).is_transient() && status(429).class() == ErrorClass::Throttling);
        assert!(!status(404).is_transient());
        let stalled = DownloadError::from_elapsed(Elapsed::new());
        assert!(stalled.is_transient() && stalled.is_timeout());
        assert_eq!(stalled.effect(), Effect::Unknown);
        let short = DownloadError::Incomplete {
            delivered: 500,
            expected: 1000,
        };
        assert!(short.is_transient() && !short.is_timeout(), "{short}");
        for done in [
            DownloadError::Changed {
                delivered: 1,
                was: None,
                now: None,
            },
            DownloadError::BadRange {
                expected: 1,
                content_range: None,
            },
            DownloadError::NoValidator { delivered: 1 },
            DownloadError::from_breaker_open(BreakerOpen::new()),
        ] {
            assert!(!done.is_transient(), "{done}");
        }
    }
}
