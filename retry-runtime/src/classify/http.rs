//! HTTP helpers (feature `http`): the server's requested delay from a `Retry-After` header, and
//! which status codes are worth retrying. With the feature `reqwest`, also which
//! `reqwest::Error`s are, and the `reqwest::Error` a timed-out attempt (a synthetic 504) or a
//! guard's rejection (a synthetic 503) becomes, so that `timeout` and the guards need nothing
//! else on a function returning `Result<_, reqwest::Error>`. And the header that carries `one_layer` across services,
//! [`OUTER_ATTEMPTS_LEFT`] ([`outer_header`] on the client, [`outer_call`] or
//! `tower::OuterRetryLayer` on the server).
//!
//! ```
//! use std::time::Duration;
//! use http::{HeaderMap, HeaderValue, Method, StatusCode, header::RETRY_AFTER};
//! use reattempt::{http::retry_after, transient};
//!
//! let mut headers = HeaderMap::new();
//! headers.insert(RETRY_AFTER, HeaderValue::from_static("120"));
//!
//! assert!(transient(&StatusCode::SERVICE_UNAVAILABLE));
//! assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
//! ```

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
use http::{HeaderMap, HeaderValue};
use http::{Method, StatusCode};

use crate::classify::{Effect, Transient};

pub use crate::classify::hints::{
    ServerHint, retried_response, retry_after, retry_after_at, server_hint, server_hint_at,
};

// Request bodies recorded up to a cap and replayed to each attempt (clients/replay_body/).
pub use crate::clients::replay_body::{BodyNotReplayable, DEFAULT_REPLAY_CAP, ReplayBody};

// Resumable downloads through reqwest (clients/download.rs).
#[cfg(feature = "reqwest")]
pub use crate::clients::download::{
    Download, DownloadCheckpoint, DownloadChunks, DownloadError, DownloadHooks, OpenDownload,
    Validator, download, download_with,
};

// Retrying at one layer across HTTP: the header and its server side (clients/outer.rs).
pub use crate::clients::outer::{
    OUTER_ATTEMPTS_LEFT, OuterCall, outer_attempts_left, outer_call, outer_header,
};

/// The `Idempotency-Key` header.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
static IDEMPOTENCY_KEY: http::HeaderName = http::HeaderName::from_static("idempotency-key");

/// Sets a retrying HTTP client's headers on one attempt's request (the tower `.http()` layer's
/// and the reqwest middleware's), in the attempt's context: with `idempotency_key`,
/// `Idempotency-Key` to the call's key (the same on every attempt) unless the request has one;
/// with `outer_attempts`, [`OUTER_ATTEMPTS_LEFT`] while this call, or one around it, will retry.
/// Whether `headers` carry an `Idempotency-Key` a server can deduplicate on: one that is not
/// empty (an empty value is no key: a client's own is put in its place).
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn has_idempotency_key(headers: &HeaderMap) -> bool {
    headers
        .get_all(&IDEMPOTENCY_KEY)
        .iter()
        .any(|v| !v.as_bytes().iter().all(u8::is_ascii_whitespace))
}

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn set_attempt_headers(
    headers: &mut HeaderMap,
    idempotency_key: bool,
    outer_attempts: bool,
) {
    if idempotency_key
        && !has_idempotency_key(headers)
        && let Some(ctx) = crate::context()
        && let Ok(value) = HeaderValue::from_str(&ctx.idempotency_key().to_string())
    {
        headers.insert(IDEMPOTENCY_KEY.clone(), value);
    }
    if outer_attempts && let Some(left) = outer_header() {
        headers.insert(OUTER_ATTEMPTS_LEFT, left);
    }
}

/// Whether `method` is idempotent (RFC 9110 §9.2.2): `GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`
/// and `DELETE`. Sending such a request twice has the effect of sending it once, so a retrying
/// client may repeat it after any failure; any other method (`POST`, `PATCH`, an extension
/// method) may do its side effect again.
///
/// ```
/// use http::Method;
/// use reattempt::http::idempotent;
///
/// assert!(idempotent(&Method::GET) && idempotent(&Method::PUT) && idempotent(&Method::DELETE));
/// assert!(!idempotent(&Method::POST) && !idempotent(&Method::PATCH));
/// ```
#[must_use]
pub fn idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// Whether `error` says that the request provably never left the client: a connection that
/// could not be made (refused: nothing listens there), found anywhere in its chain of
/// [`source`](std::error::Error::source)s as a [`std::io::Error`] of kind `ConnectionRefused`,
/// or (feature `reqwest`) a `reqwest::Error` whose `is_connect()` is true (refused, DNS, or a
/// timeout while connecting). hyper-util's legacy client reports a refused connection that way,
/// below its own error.
///
/// Any other failure (a reset, a connection closed before the answer, a timeout while waiting
/// for it) may have come after the server read the request, and so may have had its effect.
///
/// ```
/// use std::io;
/// use reattempt::http::never_sent;
///
/// assert!(never_sent(&io::Error::from(io::ErrorKind::ConnectionRefused)));
/// assert!(!never_sent(&io::Error::from(io::ErrorKind::ConnectionReset)));
/// ```
#[must_use]
pub fn never_sent(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| cause(*e)).any(|e| {
        #[cfg(feature = "reqwest")]
        if e.downcast_ref::<reqwest::Error>()
            .is_some_and(reqwest::Error::is_connect)
        {
            return true;
        }
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// Whether `error` (or an error below it) is a [`BodyNotReplayable`] of a copy left behind by
/// the replay cap: another copy took the body past it. The client's own doing, not the
/// server's outcome (see `RetryRequest::left_behind`).
#[cfg(feature = "tower")]
pub(crate) fn left_behind_by_the_cap(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| cause(*e))
        .filter_map(|e| e.downcast_ref::<BodyNotReplayable>())
        .any(BodyNotReplayable::left_behind)
}

/// The error below `error`: its source, or for an `io::Error` holding another error, that
/// error (whose own source is what the `io::Error` reports as its source, skipping it).
fn cause<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match error
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        Some(inner) => Some(inner),
        None => error.source(),
    }
}

/// Whether a response with `status` says that the server did not act on the request, so that
/// even a non-idempotent one may be sent again: 408 Request Timeout (the server did not receive
/// the whole request, RFC 9110 §15.5.9) and 429 Too Many Requests (refused before processing,
/// RFC 6585 §4). A 500, a 502 or a 504 may come after the request was acted on (by the server,
/// or by the upstream a gateway forwarded it to), and so may a 503: a service mesh (Envoy,
/// Istio) answers 503 when the upstream reset after reading the request. None of them is.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn not_processed(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS
    )
}

/// What a retrying HTTP client (the tower layer's `.http()`, the reqwest middleware) thinks of
/// one attempt's outcome, handed to a request-aware hook (`retry_request`) that decides in its
/// place.
///
/// - `retryable`: the classification says the outcome is worth another attempt (a transient
///   error, a transient status, an attempt the policy's `timeout` cut);
/// - `safe`: the request may be sent again without doing its side effect twice (RFC 9110
///   §9.2.2). True when its method is [`idempotent`], when it carries an `Idempotency-Key`
///   (its own, or the client's with `idempotency_key_header`), when the attempt provably never
///   reached the server ([`never_sent`]), when the server answered 408 or 429 (it did not act
///   on the request), or when the client says unsafe methods may be retried
///   (`retry_unsafe_methods(true)`).
///
/// The default decision is [`retry`](Verdict::retry): both.
///
/// ```
/// use reattempt::http::Verdict;
///
/// let lost_post = Verdict { retryable: true, safe: false };
/// assert!(!lost_post.retry());
/// assert!(Verdict { retryable: true, safe: true }.retry());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The outcome is worth another attempt.
    pub retryable: bool,
    /// The request may be sent again without repeating its side effect.
    pub safe: bool,
}

impl Verdict {
    /// The default decision: retry when the outcome is retryable and the request safe to send
    /// again.
    #[must_use]
    pub fn retry(self) -> bool {
        self.retryable && self.safe
    }
}

/// Whether a request with `method` and `headers` may be sent again after an attempt whose
/// outcome says the server did not act on it (`not_acted_on`) or may have: see
/// [`Verdict::safe`].
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn safe_to_resend(
    method: &Method,
    headers: &HeaderMap,
    rule: SafetyRule,
    not_acted_on: bool,
) -> bool {
    not_acted_on || rule.idempotent(method, headers)
}

/// A retrying HTTP client's settings that bear on whether a request is safe to send again.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SafetyRule {
    /// Each attempt carries the call's `Idempotency-Key`.
    pub(crate) idempotency_key: bool,
    /// The user said a non-idempotent request may be retried.
    pub(crate) unsafe_methods: bool,
    /// The user said whether requests through the client are safe to repeat (`.idempotent`),
    /// over the method rule.
    pub(crate) said: Option<bool>,
}

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
impl SafetyRule {
    /// Whether a request with `method` and `headers` is safe to repeat after an attempt whose
    /// outcome is unknown: what the user said (`.idempotent(…)`), else RFC 9110's method rule,
    /// an `Idempotency-Key` (the request's, or the client's), or `retry_unsafe_methods`.
    pub(crate) fn idempotent(self, method: &Method, headers: &HeaderMap) -> bool {
        self.said.unwrap_or_else(|| {
            self.unsafe_methods
                || idempotent(method)
                || self.idempotency_key
                || has_idempotency_key(headers)
        })
    }
}

/// How many attempts a retrying HTTP client made for the response it returns, in the response's
/// extensions (the tower layer's `.http()` and the reqwest middleware): the first attempt
/// counts, so a response that needed no retry says 1.
///
/// ```
/// use reattempt::http::Attempts;
///
/// let mut response = http::Response::new(());
/// response.extensions_mut().insert(Attempts(3));
/// assert_eq!(response.extensions().get::<Attempts>(), Some(&Attempts(3)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Attempts(pub u32);

/// 408 Request Timeout, 429 Too Many Requests, 500 Internal Server Error, 502 Bad Gateway,
/// 503 Service Unavailable and 504 Gateway Timeout are transient; every other status is not.
///
/// The six describe a server (or a proxy in front of it) that was busy, overloaded, restarting
/// or too slow this time. Other 4xx statuses are about the request itself, which a retry sends
/// unchanged; 501 Not Implemented and 505 HTTP Version Not Supported describe what the server
/// can do, which does not change from one attempt to the next; 1xx, 2xx and 3xx are not failures.
///
/// ```
/// use http::StatusCode;
/// use reattempt::Transient;
///
/// assert!(StatusCode::TOO_MANY_REQUESTS.is_transient());
/// assert!(StatusCode::BAD_GATEWAY.is_transient());
/// assert!(!StatusCode::NOT_FOUND.is_transient());
/// assert!(!StatusCode::NOT_IMPLEMENTED.is_transient());
/// ```
impl Transient for StatusCode {
    fn is_transient(&self) -> bool {
        let transient = crate::classify::effect::transient_by_effect(self.effect());
        crate::classify::effect::noting_class(self, || self.class(), transient)
    }

    /// 408 and 429 say the server did not act on the request (it did not receive all of it; it
    /// refused it before processing): not done. A 500, a 502, a 503 or a 504 may come after the
    /// request was acted on (by the server, or by the upstream a gateway forwarded it to; a
    /// service mesh answers 503 when the upstream reset after reading the request): unknown,
    /// retried by [`transient`](crate::transient) on an idempotent call only. Other statuses:
    /// unstated (not transient).
    ///
    /// ```
    /// use http::StatusCode;
    /// use reattempt::{Effect, Transient};
    ///
    /// assert_eq!(StatusCode::TOO_MANY_REQUESTS.effect(), Effect::NotDone);
    /// assert_eq!(StatusCode::BAD_GATEWAY.effect(), Effect::Unknown);
    /// ```
    fn effect(&self) -> Effect {
        match *self {
            StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS => Effect::NotDone,
            StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT => Effect::Unknown,
            _ => Effect::Unstated,
        }
    }

    /// 429 Too Many Requests is throttling; the rest transient (a 504 is the server's timeout,
    /// not this attempt's: it costs what a transient error costs).
    ///
    /// ```
    /// use http::StatusCode;
    /// use reattempt::{ErrorClass, Transient};
    ///
    /// assert_eq!(StatusCode::TOO_MANY_REQUESTS.class(), ErrorClass::Throttling);
    /// assert_eq!(StatusCode::SERVICE_UNAVAILABLE.class(), ErrorClass::Transient);
    /// ```
    fn class(&self) -> crate::ErrorClass {
        match *self {
            StatusCode::TOO_MANY_REQUESTS => crate::ErrorClass::Throttling,
            _ => crate::ErrorClass::Transient,
        }
    }
}

/// Which [`reqwest::Error`](https://docs.rs/reqwest/0.13/reqwest/struct.Error.html) values are transient (feature `reqwest`):
///
/// - connect errors (refused, reset or timed out while connecting): yes (nothing was sent);
/// - timeouts: yes on an idempotent call (the request may have been acted on: see
///   [`Effect`](crate::Effect));
/// - an error made by `Response::error_for_status`: as its [`StatusCode`](http::StatusCode);
/// - other errors while sending the request (the connection failed after it was made, or the
///   server closed a kept-alive connection before answering): yes on an idempotent call, as a
///   fresh connection usually succeeds — which is why a non-idempotent call should send an
///   idempotency key;
/// - a failure while reading the response body (reqwest reports it as a decode or body error):
///   yes when a transient [`std::io::Error`] (a reset) lies in its chain of
///   [`source`](std::error::Error::source)s; a body that is simply not the expected JSON or text
///   is not retried;
/// - builder errors (a bad URL or header) and redirect errors (a loop, too many hops): no, as they
///   repeat on every attempt.
///
/// ```
/// use reattempt::Transient;
///
/// let error = reqwest::Client::new().get("not a url").build().unwrap_err();
/// assert!(error.is_builder());
/// assert!(!error.is_transient());
/// ```
#[cfg(feature = "reqwest")]
impl Transient for reqwest::Error {
    fn is_transient(&self) -> bool {
        let transient = crate::classify::effect::transient_by_effect(self.effect());
        crate::classify::effect::noting_class(self, || self.class(), transient)
    }

    /// A connect error (refused, unreachable, timed out while connecting) proves nothing was
    /// sent: not done. A status error: as its [`StatusCode`](http::StatusCode). Any other transient error (a
    /// timeout, a connection that failed after it was made, a body cut mid-read) may come
    /// after the server acted: unknown. The rest: unstated (not transient).
    fn effect(&self) -> Effect {
        if self.is_connect() {
            return Effect::NotDone;
        }
        if let Some(status) = self.status() {
            return status.effect();
        }
        if reqwest::Error::is_timeout(self)
            || self.is_request()
            || ((self.is_body() || self.is_decode()) && io_cause_is_transient(self))
        {
            return Effect::Unknown;
        }
        Effect::Unstated
    }

    /// The client's own timeout (connect or read) ran out: a retry after it costs the budget's
    /// `timeout_cost`.
    fn is_timeout(&self) -> bool {
        reqwest::Error::is_timeout(self)
    }

    /// A status error of 429 is throttling; the client's own timeout a timeout.
    fn class(&self) -> crate::ErrorClass {
        match self.status() {
            Some(StatusCode::TOO_MANY_REQUESTS) => crate::ErrorClass::Throttling,
            _ if reqwest::Error::is_timeout(self) => crate::ErrorClass::Timeout,
            _ => crate::ErrorClass::Transient,
        }
    }
}

/// Whether a transient [`std::io::Error`] lies anywhere below `error` in its source chain.
#[cfg(feature = "reqwest")]
fn io_cause_is_transient(error: &dyn std::error::Error) -> bool {
    std::iter::successors(error.source(), |e| e.source())
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        // The table alone (its effect), not the judgement: a judgement's refusal is the
        // caller's to make, once.
        .any(|io| io.effect() != Effect::Unstated)
}

/// The error of a synthetic response with `status` and `reason` as its reason phrase: no
/// request was made, so the error's URL is reqwest's placeholder for a response built by hand.
#[cfg(feature = "reqwest")]
fn synthetic_status_error(status: StatusCode, reason: &impl std::fmt::Display) -> reqwest::Error {
    let mut response = http::Response::new("");
    *response.status_mut() = status;
    if let Ok(reason) = hyper::ext::ReasonPhrase::try_from(reason.to_string()) {
        response.extensions_mut().insert(reason);
    }
    match reqwest::Response::from(response).error_for_status() {
        Err(error) => error,
        Ok(_) => unreachable!("{status} is a server error"),
    }
}

/// A timed-out attempt becomes the error of a synthetic `504 Gateway Timeout` response (feature
/// `reqwest`): `reqwest::Error` has no public constructor, and
/// `Response::from(http::Response).error_for_status()` is the public way to make one.
///
/// Such an error has `status()` `Some(504)` and `is_status()` true; `is_timeout()` is false (only
/// reqwest's own timeouts set it) and so is [`Transient::is_timeout`], but the engine knows an
/// attempt its `timeout` cut as a timeout by itself (a budget charges `timeout_cost`); it is
/// transient, as every 504. Its `url()` is `http://no.url.provided.local/`, reqwest's placeholder
/// for a response made by hand (no request was sent), and its text names the timeout as the
/// reason phrase: `HTTP status server error (504 attempt timed out) for url
/// (http://no.url.provided.local/)`.
///
/// ```
/// use http::StatusCode;
/// use reattempt::{Elapsed, FromElapsed, Transient};
///
/// let error = reqwest::Error::from_elapsed(Elapsed::new());
/// assert_eq!(error.status(), Some(StatusCode::GATEWAY_TIMEOUT));
/// assert!(error.is_status() && !error.is_timeout());
/// assert!(error.is_transient());
/// assert_eq!(error.url().unwrap().as_str(), "http://no.url.provided.local/");
/// assert_eq!(
///     error.to_string(),
///     "HTTP status server error (504 attempt timed out) for url (http://no.url.provided.local/)"
/// );
/// ```
#[cfg(feature = "reqwest")]
impl crate::convert::FromElapsed for reqwest::Error {
    fn from_elapsed(elapsed: crate::error::Elapsed) -> Self {
        synthetic_status_error(StatusCode::GATEWAY_TIMEOUT, &elapsed)
    }
}

/// A call an open breaker rejected becomes the error of a synthetic `503 Service Unavailable`
/// response whose reason phrase is "circuit breaker is open" (feature `reqwest`), made as the
/// timeout's is ([`FromElapsed` for `reqwest::Error`](crate::FromElapsed)): `status()`
/// `Some(503)`, `is_status()` true, `is_timeout()` false, `url()`
/// `http://no.url.provided.local/`. Being a 503, it is transient for an outer retry that asks
/// [`Transient`] (the error cannot carry a mark that it is a rejection); the call whose breaker
/// rejected it does not retry it.
///
/// ```
/// use http::StatusCode;
/// use reattempt::{BreakerOpen, FromBreakerOpen};
///
/// let error = reqwest::Error::from_breaker_open(BreakerOpen::new());
/// assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
/// assert_eq!(
///     error.to_string(),
///     "HTTP status server error (503 circuit breaker is open) for url (http://no.url.provided.local/)"
/// );
/// ```
#[cfg(feature = "reqwest")]
impl crate::convert::FromBreakerOpen for reqwest::Error {
    fn from_breaker_open(open: crate::error::BreakerOpen) -> Self {
        synthetic_status_error(StatusCode::SERVICE_UNAVAILABLE, &open)
    }
}

/// An attempt the adaptive throttle shed becomes the error of a synthetic `503 Service
/// Unavailable` response whose reason phrase is "rejected by the adaptive throttle" (feature
/// `reqwest`), as a breaker's rejection does ([`FromBreakerOpen`](crate::FromBreakerOpen)).
///
/// ```
/// use http::StatusCode;
/// use reattempt::{FromThrottled, Throttled};
///
/// let error = reqwest::Error::from_throttled(Throttled::new());
/// assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
/// assert!(error.to_string().contains("503 rejected by the adaptive throttle"));
/// ```
#[cfg(feature = "reqwest")]
impl crate::convert::FromThrottled for reqwest::Error {
    fn from_throttled(shed: crate::error::Throttled) -> Self {
        synthetic_status_error(StatusCode::SERVICE_UNAVAILABLE, &shed)
    }
}

/// A call a full bulkhead turned away becomes the error of a synthetic `503 Service Unavailable`
/// response whose reason phrase is "bulkhead full" (feature `reqwest`), as a breaker's rejection
/// does ([`FromBreakerOpen`](crate::FromBreakerOpen)).
///
/// ```
/// use http::StatusCode;
/// use reattempt::{BulkheadFull, FromBulkheadFull};
///
/// let error = reqwest::Error::from_bulkhead_full(BulkheadFull::new());
/// assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
/// assert!(error.to_string().contains("503 bulkhead full"));
/// ```
#[cfg(feature = "reqwest")]
impl crate::convert::FromBulkheadFull for reqwest::Error {
    fn from_bulkhead_full(full: crate::error::BulkheadFull) -> Self {
        synthetic_status_error(StatusCode::SERVICE_UNAVAILABLE, &full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue, header::RETRY_AFTER};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Sun, 06 Nov 1994 08:49:37 GMT, the date of RFC 9110's examples.
    fn rfc_date() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    fn headers(values: &[&'static str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(RETRY_AFTER, HeaderValue::from_static(value));
        }
        map
    }

    fn at(values: &[&'static str]) -> Option<Duration> {
        retry_after_at(&headers(values), rfc_date())
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(at(&["0"]), Some(Duration::ZERO));
        assert_eq!(at(&["120"]), Some(Duration::from_secs(120)));
        assert_eq!(at(&[" 5\t"]), Some(Duration::from_secs(5)));
        assert_eq!(at(&["007"]), Some(Duration::from_secs(7)));
        let huge = "123456789012345678901234567890";
        assert_eq!(at(&[huge]), Some(Duration::from_secs(u64::MAX)));
        for bad in ["", "  ", "-1", "+1", "1.5", "1e3", "abc", "5 s", "1 2"] {
            assert_eq!(at(&[bad]), None, "{bad:?}");
        }
    }

    #[test]
    fn http_dates() {
        let before = rfc_date() - Duration::from_secs(90);
        let after = rfc_date() + Duration::from_secs(1);
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            let map = headers(&[form]);
            assert_eq!(
                retry_after_at(&map, before),
                Some(Duration::from_secs(90)),
                "{form}"
            );
            assert_eq!(retry_after_at(&map, rfc_date()), Some(Duration::ZERO));
            assert_eq!(retry_after_at(&map, after), Some(Duration::ZERO));
        }
        // Sub-second clocks: the date is whole seconds, the distance need not be.
        let map = headers(&["Sun, 06 Nov 1994 08:49:37 GMT"]);
        let now = rfc_date() - Duration::from_millis(1500);
        assert_eq!(retry_after_at(&map, now), Some(Duration::from_millis(1500)));
        assert_eq!(at(&["Sun, 06 Nov 1994 08:49:37"]), None);
        assert_eq!(at(&["Sun, 31 Nov 1994 08:49:37 GMT"]), None);
    }

    #[test]
    fn first_valid_header_wins() {
        assert_eq!(at(&["1", "2"]), Some(Duration::from_secs(1)));
        assert_eq!(at(&["later", "2"]), Some(Duration::from_secs(2)));
        assert_eq!(at(&["later", "never"]), None);
        assert_eq!(at(&[]), None);

        // Bytes that are not visible ASCII (here not even UTF-8) are no delay.
        let mut map = HeaderMap::new();
        map.insert(RETRY_AFTER, HeaderValue::from_bytes(b"\xff1").unwrap());
        assert_eq!(retry_after_at(&map, rfc_date()), None);
    }

    #[test]
    fn status_codes() {
        let transient: Vec<u16> = (100..=599)
            .filter_map(|code| StatusCode::from_u16(code).ok())
            .filter(Transient::is_transient)
            .map(|status| status.as_u16())
            .collect();
        assert_eq!(transient, [408, 429, 500, 502, 503, 504]);
    }

    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    #[test]
    fn only_statuses_that_say_nothing_was_done_make_a_post_safe() {
        let not_done: Vec<u16> = (100..=599)
            .filter_map(|code| StatusCode::from_u16(code).ok())
            .filter(|s| not_processed(*s))
            .map(|s| s.as_u16())
            .collect();
        assert_eq!(
            not_done,
            [408, 429],
            "a mesh's 503 may come after the upstream acted"
        );
    }

    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    #[test]
    fn a_request_is_safe_to_resend_for_one_reason_or_another() {
        let none = HeaderMap::new();
        let mut keyed = HeaderMap::new();
        keyed.insert("idempotency-key", HeaderValue::from_static("k"));
        let rule = SafetyRule::default();
        let own_key = SafetyRule {
            idempotency_key: true,
            ..rule
        };
        let opted_in = SafetyRule {
            unsafe_methods: true,
            ..rule
        };
        for method in [Method::POST, Method::PATCH, Method::CONNECT] {
            assert!(!safe_to_resend(&method, &none, rule, false), "{method}");
            assert!(
                safe_to_resend(&method, &none, rule, true),
                "{method}: not acted on"
            );
            assert!(
                safe_to_resend(&method, &keyed, rule, false),
                "{method}: its key"
            );
            assert!(
                safe_to_resend(&method, &none, own_key, false),
                "{method}: ours"
            );
            assert!(
                safe_to_resend(&method, &none, opted_in, false),
                "{method}: opted in"
            );
        }
        for method in [Method::GET, Method::HEAD, Method::PUT, Method::DELETE] {
            assert!(safe_to_resend(&method, &none, rule, false), "{method}");
        }
    }

    #[test]
    fn never_sent_looks_through_the_sources() {
        use std::io::{Error, ErrorKind};

        let refused: Box<dyn std::error::Error + Send + Sync> =
            Box::new(Error::other(Error::from(ErrorKind::ConnectionRefused)));
        assert!(never_sent(&*refused));
        let reset = Error::other(Error::from(ErrorKind::ConnectionReset));
        assert!(!never_sent(&reset));
        assert!(!never_sent(&crate::error::Elapsed::new()));
    }

    #[cfg(feature = "reqwest")]
    #[test]
    fn reqwest_conversions_are_synthetic_status_errors() {
        use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromElapsed, FromThrottled};
        use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};

        let placeholder = "http://no.url.provided.local/";
        let timed_out = reqwest::Error::from_elapsed(Elapsed::new());
        assert_eq!(timed_out.status(), Some(StatusCode::GATEWAY_TIMEOUT));
        assert!(timed_out.is_status() && !timed_out.is_timeout() && !timed_out.is_connect());
        assert!(timed_out.is_transient() && !Transient::is_timeout(&timed_out));
        assert_eq!(timed_out.url().map(reqwest::Url::as_str), Some(placeholder));
        for (error, text) in [
            (
                reqwest::Error::from_breaker_open(BreakerOpen::new()),
                "circuit breaker is open",
            ),
            (
                reqwest::Error::from_throttled(Throttled::new()),
                "rejected by the adaptive throttle",
            ),
            (
                reqwest::Error::from_bulkhead_full(BulkheadFull::new()),
                "bulkhead full",
            ),
        ] {
            assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
            assert!(error.is_status() && !error.is_timeout());
            assert_eq!(error.url().map(reqwest::Url::as_str), Some(placeholder));
            assert_eq!(
                error.to_string(),
                format!("HTTP status server error (503 {text}) for url ({placeholder})")
            );
        }
    }

    #[cfg(feature = "reqwest")]
    #[test]
    fn reqwest_builder_errors_are_permanent() {
        let error = reqwest::Client::new().get("not a url").build().unwrap_err();
        assert!(error.is_builder());
        assert!(!error.is_transient());
    }

    #[cfg(feature = "reqwest")]
    #[test]
    fn io_causes() {
        use std::io::{Error, ErrorKind};

        #[derive(Debug)]
        struct Wrapper(Error);
        impl std::fmt::Display for Wrapper {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("wrapper")
            }
        }
        impl std::error::Error for Wrapper {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }

        let outer = |kind| Wrapper(Error::other(Wrapper(Error::from(kind))));
        assert!(io_cause_is_transient(&outer(ErrorKind::ConnectionReset)));
        assert!(!io_cause_is_transient(&outer(ErrorKind::InvalidData)));
        // The error itself is not its own cause.
        assert!(!io_cause_is_transient(&Error::from(
            ErrorKind::ConnectionReset
        )));
    }
}
