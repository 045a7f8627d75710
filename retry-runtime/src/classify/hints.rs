//! What a response says about retrying it: one reader of every retry hint servers send (see
//! [`server_hint`]).

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, header::RETRY_AFTER};

/// What a response's headers say about retrying it: how long to wait, and whether to retry at
/// all. Read by [`server_hint`].
///
/// ```
/// use std::time::Duration;
/// use http::HeaderMap;
/// use reattempt::http::{ServerHint, server_hint};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-amz-retry-after", "1500".parse().unwrap());
/// headers.insert("x-should-retry", "true".parse().unwrap());
/// assert_eq!(
///     server_hint(&headers),
///     ServerHint { delay: Some(Duration::from_millis(1500)), should_retry: Some(true) }
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerHint {
    /// How long the server asked to wait before the next attempt, if it said: a floor under the
    /// schedule's delay.
    pub delay: Option<Duration>,
    /// `x-should-retry`: `Some(false)` the server says not to retry (whatever the status),
    /// `Some(true)` to retry (a status otherwise final), `None` it did not say.
    pub should_retry: Option<bool>,
}

/// How a millisecond header's value is read.
type ReadMillis = fn(&str) -> Option<u64>;

/// The hint headers, in the order a delay is taken from them (the first that gives one wins),
/// each with how its value is read.
const MS_HEADERS: [(&str, ReadMillis); 3] = [
    ("retry-after-ms", digits),
    ("x-ms-retry-after-ms", digits),
    ("x-amz-retry-after", aws_millis),
];

/// The most milliseconds an `x-amz-retry-after` may say: what a signed 64-bit count of
/// nanoseconds holds (aws-sdk-go-v2's `time.Duration`, about 292 years). A larger value
/// overflows Go's arithmetic, which ignores it as an invalid one, and so does this crate
/// (botocore and smithy-rs read it and clamp it to `tᵢ + 5 s`).
const AWS_MAX_MILLIS: u64 = i64::MAX.unsigned_abs() / 1_000_000;

/// An `x-amz-retry-after` value as the AWS SDKs' 2026 standard mode reads it: an integer count of
/// milliseconds (a leading `+` allowed, as botocore's `int()`, Go's `strconv` and Rust's `u64`
/// parse allow it); `None`, so that the schedule's delay is used, for anything else: a fraction,
/// a negative value, text, or one that overflows ([`AWS_MAX_MILLIS`]).
fn aws_millis(text: &str) -> Option<u64> {
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    digits(unsigned).filter(|ms| *ms <= AWS_MAX_MILLIS)
}

/// Every retry hint of a response's headers, measured from now (see [`server_hint_at`] for the
/// rules). The tower layer's `.http()` and the reqwest middleware read a retried response's hint
/// here; with `#[retryable]`, name it in `retry_after` for an error that carries its response's
/// headers: `retry_after = |e: &ApiError| reattempt::http::server_hint(e.headers()).delay`.
#[must_use]
pub fn server_hint(headers: &HeaderMap) -> ServerHint {
    server_hint_at(headers, SystemTime::now())
}

/// [`server_hint`] with the current time passed in (for an HTTP-date).
///
/// **The delay**, from the first of these that gives one (a header that is missing, malformed,
/// negative or fractional gives none, and the next is read):
/// 1. `retry-after-ms` (milliseconds; the APIs of `OpenAI` and others),
/// 2. `x-ms-retry-after-ms` (milliseconds; Azure),
/// 3. `x-amz-retry-after` (milliseconds; AWS, honoured by the SDKs' 2026 standard mode, which
///    ignore a value that is not an integer or is negative; one that overflows Go's durations,
///    above about 292 years (`9223372036854775807` for one), aws-sdk-go-v2 ignores too, while
///    botocore and smithy-rs clamp it: such a value gives no delay here, as in Go, rather than
///    saturating),
/// 4. `Retry-After` (RFC 9110: delta-seconds or an HTTP-date; see
///    [`retry_after_at`]),
/// 5. the IETF `RateLimit` field (`"minute";r=0;t=10`: the longest `t` of the policies with no
///    quota left; the older drafts' `limit=100, remaining=0, reset=10`) or `RateLimit-Reset`
///    beside `RateLimit-Remaining: 0` (seconds): only where the quota is said to be spent.
///
/// Millisecond fields come first: they are meant as retry delays and are the more precise;
/// `Retry-After` is the standard one; a rate limit's reset says when the quota comes back, the
/// least direct answer. A value too large for a `u64` saturates (the engine then ends the call,
/// as for any hint beyond `max_delay`), except `x-amz-retry-after`'s (above); a date in the past
/// is no wait.
///
/// **Whether to retry**: `x-should-retry: true` or `false` (the APIs of `OpenAI` and Anthropic; any
/// case, surrounding spaces allowed); anything else is ignored.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::HeaderMap;
/// use reattempt::http::server_hint_at;
///
/// let mut h = HeaderMap::new();
/// h.insert("retry-after", "120".parse().unwrap());
/// h.insert("retry-after-ms", "250".parse().unwrap());
/// let hint = server_hint_at(&h, SystemTime::UNIX_EPOCH);
/// assert_eq!(hint.delay, Some(Duration::from_millis(250)), "milliseconds first");
/// ```
#[must_use]
pub fn server_hint_at(headers: &HeaderMap, now: SystemTime) -> ServerHint {
    let millis = MS_HEADERS.iter().find_map(|(name, read)| {
        headers
            .get_all(*name)
            .iter()
            .find_map(|v| read(text(v)?).map(Duration::from_millis))
    });
    let delay = millis
        .or_else(|| retry_after_at(headers, now))
        .or_else(|| rate_limit_reset(headers));
    ServerHint {
        delay,
        should_retry: should_retry(headers),
    }
}

/// `x-should-retry: true` or `false` (any case, spaces trimmed); `None` for anything else.
fn should_retry(headers: &HeaderMap) -> Option<bool> {
    headers.get_all("x-should-retry").iter().find_map(|v| {
        match text(v)?.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    })
}

/// Whether a response of `status` with `headers` is retried by the HTTP classification (the
/// tower layer's `.http()`, the reqwest middleware): a failure (4xx or 5xx) as its
/// `x-should-retry` says (`false` ends the call even on a 503; `true` retries even a 409), else
/// as its status is [`Transient`](crate::Transient); a success or a redirect never.
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use reattempt::http::retried_response;
///
/// let mut h = HeaderMap::new();
/// assert!(retried_response(StatusCode::SERVICE_UNAVAILABLE, &h));
/// h.insert("x-should-retry", "false".parse().unwrap());
/// assert!(!retried_response(StatusCode::SERVICE_UNAVAILABLE, &h));
/// h.insert("x-should-retry", "true".parse().unwrap());
/// assert!(retried_response(StatusCode::CONFLICT, &h));
/// assert!(!retried_response(StatusCode::OK, &h), "a success is never retried");
/// ```
#[must_use]
pub fn retried_response(status: http::StatusCode, headers: &HeaderMap) -> bool {
    use crate::Transient as _;
    if !(status.is_client_error() || status.is_server_error()) {
        return false;
    }
    // Only the yes-or-no: the delay headers are read by the retry's hint, once.
    should_retry(headers).unwrap_or_else(|| status.is_transient())
}

/// A header's text, trimmed; `None` when it is not visible ASCII.
fn text(value: &HeaderValue) -> Option<&str> {
    value.to_str().ok().map(str::trim)
}

/// When a rate limit with no quota left resets, in seconds.
///
/// - The IETF `RateLimit` field is a list of policies (`"minute";r=0;t=10, "day";r=100;t=3600`),
///   each with its remaining quota `r` and its reset `t`: the longest `t` of the policies whose
///   `r` is 0 (the client can send again once each exhausted one has reset). An older draft's
///   dictionary (`limit=100, remaining=0, reset=10`) says the same of one policy.
/// - `RateLimit-Reset` (an older draft's field) counts only beside `RateLimit-Remaining: 0`: a
///   reset alone does not say that the quota is spent.
fn rate_limit_reset(headers: &HeaderMap) -> Option<Duration> {
    let from_field = headers
        .get_all("ratelimit")
        .iter()
        .filter_map(|v| exhausted_reset(text(v)?))
        .max();
    let separate = || {
        let remaining = headers
            .get("ratelimit-remaining")
            .and_then(|v| digits(text(v)?))?;
        (remaining == 0)
            .then(|| {
                headers
                    .get_all("ratelimit-reset")
                    .iter()
                    .find_map(|v| digits(text(v)?))
            })
            .flatten()
    };
    from_field.or_else(separate).map(Duration::from_secs)
}

/// The reset of one `RateLimit` field value's exhausted policies (see [`rate_limit_reset`]).
fn exhausted_reset(field: &str) -> Option<u64> {
    // Each list member's parameters (`r`, `t`); an older draft's dictionary is one member whose
    // keys are spread over the commas.
    let member = |part: &str| {
        let (mut remaining, mut reset) = (None, None);
        for param in part.split(';') {
            let Some((key, value)) = param.trim().split_once('=') else {
                continue;
            };
            let value = digits(value.trim());
            match key.trim() {
                "r" | "remaining" => remaining = value,
                "t" | "reset" => reset = value,
                _ => {}
            }
        }
        (remaining, reset)
    };
    let members: Vec<_> = field.split(',').map(member).collect();
    let structured = members.iter().any(|(r, t)| r.is_some() && t.is_some());
    if structured {
        members
            .into_iter()
            .filter_map(|(r, t)| (r == Some(0)).then_some(t).flatten())
            .max()
    } else {
        // The older dictionary: its keys across the members.
        let remaining = members.iter().find_map(|(r, _)| *r);
        let reset = members.iter().find_map(|(_, t)| *t);
        reset.filter(|_| remaining == Some(0))
    }
}

// `Retry-After` lives here, with the other hints that read it, and is re-exported by
// `classify::http` at its public path (`reattempt::http::retry_after`).
/// The delay a response's `Retry-After` header asks for, measured from now.
///
/// Both forms of RFC 9110 §10.2.3 are read: delta-seconds (`120`) and an HTTP-date
/// (`Fri, 31 Dec 1999 23:59:59 GMT`, or the obsolete RFC 850 and asctime forms). A date in the
/// past gives [`Duration::ZERO`]. When the header is repeated, the first value that parses wins;
/// a missing or malformed header gives `None`. See [`retry_after_at`] for the rules in full.
///
/// The result is not bounded here: given to `retry_after`, a hint beyond `max_delay` (or past
/// the call's deadline) ends the call with its error, since the client may not come back sooner.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::{HeaderMap, HeaderValue, header::RETRY_AFTER};
/// use reattempt::http::retry_after;
///
/// let mut headers = HeaderMap::new();
/// assert_eq!(retry_after(&headers), None);
///
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("5"));
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(5)));
///
/// let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(60));
/// headers.insert(RETRY_AFTER, in_a_minute.parse().unwrap());
/// let delay = retry_after(&headers).unwrap();
/// assert!(delay <= Duration::from_secs(60) && delay >= Duration::from_secs(55));
/// ```
#[must_use]
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// [`retry_after`] with the current time passed in, so that an HTTP-date is measured against a
/// clock of the caller's choosing (a test's fixed instant, the response's `Date` header).
///
/// A value is read as:
/// - delta-seconds when, after trimming surrounding whitespace, it is only ASCII digits. A number
///   too large for a `u64` saturates at `u64::MAX` seconds rather than being rejected: the server
///   asked for "a very long time", not for nothing.
/// - otherwise an HTTP-date, parsed by [`httpdate`](https://docs.rs/httpdate/1); its distance from `now`, or
///   [`Duration::ZERO`] when it is not after `now`.
///
/// Signs, fractions (`1.5`), empty values, other text and values that are not visible ASCII give
/// no delay. Of several `Retry-After` headers, the first that parses is used, so that one garbled
/// value does not hide a good one.
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use http::{HeaderMap, HeaderValue, header::RETRY_AFTER};
/// use reattempt::http::retry_after_at;
///
/// // Sun, 06 Nov 1994 08:49:37 GMT
/// let date = UNIX_EPOCH + Duration::from_secs(784_111_777);
/// let mut headers = HeaderMap::new();
/// headers.append(RETRY_AFTER, HeaderValue::from_static("soon"));
/// headers.append(RETRY_AFTER, HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"));
///
/// let a_minute_before = date - Duration::from_secs(60);
/// assert_eq!(retry_after_at(&headers, a_minute_before), Some(Duration::from_secs(60)));
/// assert_eq!(retry_after_at(&headers, date + Duration::from_secs(1)), Some(Duration::ZERO));
/// ```
#[must_use]
pub fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    headers
        .get_all(RETRY_AFTER)
        .iter()
        .find_map(|value| parse_retry_after(value, now))
}

/// A header's count written as ASCII digits only (`Retry-After`'s delta-seconds,
/// [`OUTER_ATTEMPTS_LEFT`]), too large a one saturating; `None` for empty text or any other
/// character (a sign, a fraction, a date).
pub(crate) fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Only digits: the parse can fail only by overflowing.
    Some(text.parse::<u64>().unwrap_or(u64::MAX))
}

/// One `Retry-After` value, read as [`retry_after_at`] describes.
fn parse_retry_after(value: &HeaderValue, now: SystemTime) -> Option<Duration> {
    // `to_str` refuses anything but visible ASCII (and tabs), which covers non-UTF-8 bytes.
    let text = value.to_str().ok()?.trim();
    if let Some(seconds) = digits(text) {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(text).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: SystemTime = SystemTime::UNIX_EPOCH;

    fn hint(pairs: &[(&str, &str)]) -> ServerHint {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        // The clock at 1000 s after the epoch, for dates.
        server_hint_at(&h, T0 + Duration::from_secs(1000))
    }

    fn delay(pairs: &[(&str, &str)]) -> Option<Duration> {
        hint(pairs).delay
    }

    const MS: Duration = Duration::from_millis(1);
    const S: Duration = Duration::from_secs(1);

    /// One case: its name, its headers, the delay they give.
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<Duration>);

    /// Forms, precedence, garbage, past dates, negative and huge values.
    #[test]
    #[allow(clippy::too_many_lines, reason = "a table of cases")]
    fn the_table_of_header_cases() {
        let date_in_30s = httpdate::fmt_http_date(T0 + Duration::from_secs(1030));
        let date_past = httpdate::fmt_http_date(T0 + Duration::from_secs(10));
        let rows: Vec<Case<'_>> = vec![
            ("none", vec![], None),
            (
                "Retry-After seconds",
                vec![("retry-after", "120")],
                Some(120 * S),
            ),
            (
                "Retry-After date",
                vec![("retry-after", &date_in_30s)],
                Some(30 * S),
            ),
            (
                "Retry-After past date",
                vec![("retry-after", &date_past)],
                Some(Duration::ZERO),
            ),
            (
                "retry-after-ms",
                vec![("retry-after-ms", "250")],
                Some(250 * MS),
            ),
            (
                "x-ms-retry-after-ms",
                vec![("x-ms-retry-after-ms", "40")],
                Some(40 * MS),
            ),
            (
                "x-amz-retry-after",
                vec![("x-amz-retry-after", "1500")],
                Some(1500 * MS),
            ),
            (
                "ms before Retry-After",
                vec![("retry-after", "120"), ("x-amz-retry-after", "1500")],
                Some(1500 * MS),
            ),
            (
                "retry-after-ms before the others",
                vec![
                    ("x-amz-retry-after", "1500"),
                    ("retry-after-ms", "20"),
                    ("x-ms-retry-after-ms", "30"),
                ],
                Some(20 * MS),
            ),
            (
                "garbage falls through",
                vec![("retry-after-ms", "soon"), ("retry-after", "7")],
                Some(7 * S),
            ),
            ("negative ignored", vec![("x-amz-retry-after", "-5")], None),
            ("fraction ignored", vec![("retry-after-ms", "1.5")], None),
            (
                "huge saturates",
                vec![("retry-after-ms", "99999999999999999999999")],
                Some(Duration::from_millis(u64::MAX)),
            ),
            (
                "RateLimit structured",
                vec![("ratelimit", "\"default\";r=0;t=10")],
                Some(10 * S),
            ),
            (
                "RateLimit with quota left",
                vec![("ratelimit", "\"default\";r=5;t=10")],
                None,
            ),
            (
                "RateLimit older draft",
                vec![("ratelimit", "limit=100, remaining=0, reset=3")],
                Some(3 * S),
            ),
            (
                "RateLimit-Reset alone",
                vec![("ratelimit-reset", "4")],
                None,
            ),
            (
                "RateLimit-Reset with no quota left",
                vec![("ratelimit-reset", "4"), ("ratelimit-remaining", "0")],
                Some(4 * S),
            ),
            (
                "RateLimit: one exhausted policy of two",
                vec![("ratelimit", "\"minute\";r=0;t=10, \"day\";r=100;t=36000")],
                Some(10 * S),
            ),
            (
                "RateLimit: the order of policies does not matter",
                vec![("ratelimit", "\"day\";r=100;t=36000, \"minute\";r=0;t=10")],
                Some(10 * S),
            ),
            (
                "RateLimit: the longest reset of the exhausted policies",
                vec![("ratelimit", "\"minute\";r=0;t=10, \"hour\";r=0;t=1800")],
                Some(1800 * S),
            ),
            (
                "RateLimit-Reset with quota left",
                vec![("ratelimit-reset", "4"), ("ratelimit-remaining", "9")],
                None,
            ),
            (
                "Retry-After before RateLimit",
                vec![
                    ("ratelimit-reset", "4"),
                    ("ratelimit-remaining", "0"),
                    ("retry-after", "1"),
                ],
                Some(S),
            ),
            ("empty value", vec![("retry-after-ms", "")], None),
            // The AWS SDKs' 2026 vectors (botocore `test_standard_retry_v2_1.py`
            // `test_x_amz_retry_after_header_is_honored`, aws-sdk-go-v2 `retry2026_test.go`):
            // `invalid` and `-100` are ignored; an overflowing value too (as aws-sdk-go-v2 does).
            (
                "x-amz-retry-after invalid",
                vec![("x-amz-retry-after", "invalid")],
                None,
            ),
            (
                "x-amz-retry-after -100",
                vec![("x-amz-retry-after", "-100")],
                None,
            ),
            (
                "x-amz-retry-after overflowing",
                vec![("x-amz-retry-after", "9223372036854775807")],
                None,
            ),
            (
                "x-amz-retry-after beyond u64",
                vec![("x-amz-retry-after", "99999999999999999999999")],
                None,
            ),
            (
                "x-amz-retry-after at the most a duration holds",
                vec![("x-amz-retry-after", "9223372036854")],
                Some(Duration::from_millis(9_223_372_036_854)),
            ),
            (
                "x-amz-retry-after one past it",
                vec![("x-amz-retry-after", "9223372036855")],
                None,
            ),
            (
                "x-amz-retry-after +5",
                vec![("x-amz-retry-after", "+5")],
                Some(5 * MS),
            ),
            (
                "x-amz-retry-after 1.5",
                vec![("x-amz-retry-after", "1.5")],
                None,
            ),
            (
                "an ignored x-amz-retry-after falls through to Retry-After",
                vec![
                    ("x-amz-retry-after", "9223372036854775807"),
                    ("retry-after", "2"),
                ],
                Some(2 * S),
            ),
            (
                "spaces trimmed",
                vec![("x-amz-retry-after", "  300 ")],
                Some(300 * MS),
            ),
        ];
        assert!(rows.len() >= 15);
        for (name, pairs, want) in rows {
            assert_eq!(delay(&pairs), want, "{name}");
        }
    }

    #[test]
    fn x_should_retry_says_yes_no_or_nothing() {
        assert_eq!(
            hint(&[("x-should-retry", "false")]).should_retry,
            Some(false)
        );
        assert_eq!(
            hint(&[("x-should-retry", " TRUE ")]).should_retry,
            Some(true)
        );
        assert_eq!(hint(&[("x-should-retry", "maybe")]).should_retry, None);
        assert_eq!(hint(&[]).should_retry, None);
        let both = hint(&[("x-should-retry", "false"), ("retry-after", "2")]);
        assert_eq!(
            both,
            ServerHint {
                delay: Some(2 * S),
                should_retry: Some(false)
            }
        );
    }
}
