//! The handlers of `GET /objects/{name}` and `GET /events?after=N`, and the body both send: pieces
//! made on demand (nothing held per request), counted as they are handed to the connection, cut
//! by a scripted reset or stall.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body::{Body, Frame, SizeHint};
use serde_json::json;

use super::conn::Conn;
use super::drain::drained;
use super::event::{EventFault, EventLog, EventRequest, event_line};
use super::kill::Kill;
use super::object::{CHUNK, Object, ObjectFault, ObjectLog, ObjectRequest};
use super::state::Shared;

/// The longest a stalled body stays silent before its connection is reset (when nothing stopped
/// it).
const STALL_LIMIT: Duration = Duration::from_secs(30);

/// How a body is cut short.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Reset the connection once what was written has left the socket.
    Reset,
    /// Stop sending; reset at the service's stop or after [`STALL_LIMIT`].
    Stall,
}

type Pieces = Box<dyn Iterator<Item = (Bytes, u64)> + Send>;

/// A body sent in pieces, each counting some units (bytes of an object, events of the feed) on
/// the request's counter as it is handed to the connection, and cut after `cut.0` units.
struct Streamed {
    pieces: Pieces,
    sent: Arc<AtomicU64>,
    units: u64,
    cut: Option<(u64, Cut)>,
    /// Body bytes still to come, as declared (an object's `Content-Length`).
    left: Option<u64>,
    kill: Arc<Kill>,
    waiting: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    stopping: tokio::sync::watch::Receiver<bool>,
    killed: bool,
}

impl Body for Streamed {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.killed {
            // The connection fails on its next write or flush: nothing more to send.
            return Poll::Pending;
        }
        if this.waiting.is_none()
            && let Some((at, cut)) = this.cut
            && this.units >= at
        {
            let kill = Arc::clone(&this.kill);
            let mut stopping = this.stopping.clone();
            this.waiting = Some(match cut {
                Cut::Reset => Box::pin(async move { drained(&kill).await }),
                Cut::Stall => Box::pin(async move {
                    let _ =
                        tokio::time::timeout(STALL_LIMIT, stopping.wait_for(|stop| *stop)).await;
                }),
            });
        }
        if let Some(waiting) = &mut this.waiting {
            ready!(waiting.as_mut().poll(cx));
            this.waiting = None;
            this.killed = true;
            this.kill.kill();
            // Polled again, the connection meets its switch and is reset.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        match this.pieces.next() {
            Some((piece, units)) => {
                this.units += units;
                this.sent.fetch_add(units, SeqCst);
                if let Some(left) = &mut this.left {
                    *left -= piece.len() as u64;
                }
                Poll::Ready(Some(Ok(Frame::data(piece))))
            }
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.left == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        self.left
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// `GET /objects/{name}`: the object whole (200) or from an offset (206), per `Range` and
/// `If-Range` (RFC 9110 §14.2, §13.1.5), unless a script says otherwise.
pub(super) async fn object(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (range, if_range) = (text(header::RANGE), text(header::IF_RANGE));
    let written = Arc::new(AtomicU64::new(0));
    let Some(Arrived {
        object,
        fault,
        ignore_range,
        without_etag,
        answer,
    }) = arrive(&shared, &name, range.clone(), if_range, &written)
    else {
        shared.say(format!("404: no object {name}"));
        return error(StatusCode::NOT_FOUND, "no such object");
    };
    let len = object.len();
    let (status, span) = match answer {
        Answer::Status(code) => {
            shared.say(format!("{code} for object {name} (scripted)"));
            let code = StatusCode::from_u16(code).expect("a status code");
            return error(code, "scripted status");
        }
        Answer::Unsatisfiable => {
            shared.say(format!("416 for object {name}: {range:?}"));
            let mut response = error(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable");
            response
                .headers_mut()
                .insert(header::CONTENT_RANGE, value(&format!("bytes */{len}")));
            return response;
        }
        Answer::Whole => (StatusCode::OK, 0..len),
        Answer::Part(span) => (StatusCode::PARTIAL_CONTENT, span),
    };
    shared.say(format!(
        "{} object {name} v{} bytes {}..{} ({fault})",
        status.as_u16(),
        object.version(),
        span.start,
        span.end
    ));
    let mut response = Response::new(axum::body::Body::empty());
    *response.status_mut() = status;
    let part = (status == StatusCode::PARTIAL_CONTENT).then_some(&span);
    describe(
        response.headers_mut(),
        &object,
        part,
        ignore_range,
        without_etag,
    );
    let cut = match fault {
        ObjectFault::ResetAt(at) => Some((at.saturating_sub(span.start), Cut::Reset)),
        ObjectFault::StallAt(at) => Some((at.saturating_sub(span.start), Cut::Stall)),
        ObjectFault::Pass | ObjectFault::Status(_) => None,
    }
    .filter(|&(at, _)| at < span.end - span.start);
    let body = Streamed {
        left: Some(span.end - span.start),
        pieces: object_pieces(object, span, cut.map(|(at, _)| at)),
        sent: written,
        units: 0,
        cut,
        kill: Arc::clone(&conn.kill),
        waiting: None,
        stopping: shared.stopping.subscribe(),
        killed: false,
    };
    *response.body_mut() = axum::body::Body::new(body);
    response
}

/// A request for an object, logged with its counter and its fault drawn, and what it gets.
struct Arrived {
    object: Object,
    fault: ObjectFault,
    ignore_range: bool,
    without_etag: bool,
    answer: Answer,
}

/// Logs a request for `name` and draws its fault; `None` when there is no such object.
fn arrive(
    shared: &Shared,
    name: &str,
    range: Option<String>,
    if_range: Option<String>,
    written: &Arc<AtomicU64>,
) -> Option<Arrived> {
    let mut state = shared.lock();
    let entry = state.objects.get_mut(name)?;
    let fault = entry.faults.pop_front().unwrap_or(ObjectFault::Pass);
    let object = entry.current.clone();
    let answer = match fault {
        ObjectFault::Status(code) => Answer::Status(code),
        _ if entry.ignore_range => Answer::Whole,
        _ => choose(
            &object,
            range.as_deref(),
            if_range.as_deref(),
            entry.without_etag,
        ),
    };
    let (status, start) = match answer {
        Answer::Whole => (200, 0),
        Answer::Part(ref r) => (206, r.start),
        Answer::Unsatisfiable => (416, 0),
        Answer::Status(code) => (code, 0),
    };
    entry.requests.push(ObjectLog {
        seen: ObjectRequest {
            range,
            if_range,
            fault,
            version: object.version(),
            status,
            start,
            written: 0,
        },
        written: Arc::clone(written),
    });
    // Replaced once this request has arrived: it is served from the version it found.
    if entry.replace_after == Some(entry.requests.len()) {
        entry.replace_after = None;
        entry.current = entry.current.next();
    }
    Some(Arrived {
        object,
        fault,
        ignore_range: entry.ignore_range,
        without_etag: entry.without_etag,
        answer,
    })
}

/// An object's answer's headers: its type, validators, range support and `Content-Range`.
fn describe(
    h: &mut HeaderMap,
    object: &Object,
    part: Option<&Range<u64>>,
    no_ranges: bool,
    no_etag: bool,
) {
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if !no_etag {
        h.insert(header::ETAG, value(&object.etag()));
    }
    h.insert(header::LAST_MODIFIED, value(&object.last_modified_header()));
    if !no_ranges {
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }
    if let Some(span) = part {
        let (first, last, len) = (span.start, span.end - 1, object.len());
        h.insert(
            header::CONTENT_RANGE,
            value(&format!("bytes {first}-{last}/{len}")),
        );
    }
}

/// What a request for an object gets.
enum Answer {
    Whole,
    Part(Range<u64>),
    Unsatisfiable,
    Status(u16),
}

/// RFC 9110's choice: a `Range` of one `bytes=N-` or `bytes=N-M` is honoured unless an
/// `If-Range` does not match the object (a strong `ETag` compared strongly, or a date equal to
/// `Last-Modified`); any other `Range` is ignored (the whole object), as §14.2 allows.
fn choose(object: &Object, range: Option<&str>, if_range: Option<&str>, no_etag: bool) -> Answer {
    let Some(span) = range.and_then(parse_range) else {
        return Answer::Whole;
    };
    if let Some(validator) = if_range {
        let matches = if validator.starts_with('"') {
            !no_etag && validator == object.etag()
        } else if validator.starts_with("W/") {
            false // a weak ETag never matches for If-Range (§13.1.5)
        } else {
            httpdate::parse_http_date(validator).ok() == Some(object.last_modified())
        };
        if !matches {
            return Answer::Whole;
        }
    }
    let (first, last) = span;
    if first >= object.len() {
        return Answer::Unsatisfiable;
    }
    let end = last.map_or(object.len(), |l| l.saturating_add(1).min(object.len()));
    Answer::Part(first..end)
}

/// `bytes=N-` or `bytes=N-M` (M ≥ N) as (N, M); `None` for anything else.
fn parse_range(range: &str) -> Option<(u64, Option<u64>)> {
    let spec = range.trim().strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    let first = first.trim().parse().ok()?;
    let last = match last.trim() {
        "" => None,
        l => Some(l.parse().ok().filter(|&l| l >= first)?),
    };
    Some((first, last))
}

/// The pieces of `span` of `object`, of at most [`CHUNK`] bytes, one cut at `cut` bytes from the
/// start so that a reset or a stall falls exactly there; each counts its bytes.
fn object_pieces(object: Object, span: Range<u64>, cut: Option<u64>) -> Pieces {
    let cut = cut.map(|c| span.start + c);
    let mut at = span.start;
    Box::new(std::iter::from_fn(move || {
        if at >= span.end {
            return None;
        }
        let mut end = (at + CHUNK).min(span.end);
        if let Some(cut) = cut
            && at < cut
        {
            end = end.min(cut);
        }
        let piece = object.range(at..end);
        let units = end - at;
        at = end;
        Some((piece, units))
    }))
}

/// `GET /events?after=N`: the events after `N` published so far, one line each, in order, then
/// the end of the body; unless a script says otherwise.
pub(super) async fn events(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    RawQuery(query): RawQuery,
) -> Response {
    let after = query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("after="))
        .and_then(|n| n.parse::<u64>().ok());
    let Some(after) = after.or(query.is_none().then_some(0)) else {
        shared.say("400: after=N is not a number");
        return error(StatusCode::BAD_REQUEST, "after=N must be a number");
    };
    let sent = Arc::new(AtomicU64::new(0));
    let (fault, published) = {
        let mut state = shared.lock();
        let feed = &mut state.feed;
        let fault = feed.faults.pop_front().unwrap_or(EventFault::Pass);
        let status = match fault {
            EventFault::Status(code) => code,
            _ => 200,
        };
        feed.requests.push(EventLog {
            seen: EventRequest {
                after,
                fault,
                status,
                sent: 0,
            },
            sent: Arc::clone(&sent),
        });
        (fault, feed.published)
    };
    shared.say(format!("events after {after} of {published} ({fault})"));
    let cut = match fault {
        EventFault::Status(code) => {
            let code = StatusCode::from_u16(code).expect("a status code");
            return error(code, "scripted status");
        }
        EventFault::Pass => None,
        EventFault::ResetAfter(k) => Some((k, Cut::Reset)),
        EventFault::StallAfter(k) => Some((k, Cut::Stall)),
    }
    .filter(|&(k, _)| k < published.saturating_sub(after));
    let body = Streamed {
        pieces: Box::new((after + 1..=published).map(|seq| (Bytes::from(event_line(seq)), 1))),
        sent,
        units: 0,
        cut,
        left: None,
        kill: Arc::clone(&conn.kill),
        waiting: None,
        stopping: shared.stopping.subscribe(),
        killed: false,
    };
    let mut response = Response::new(axum::body::Body::new(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

fn value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).expect("a header value")
}

fn error(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(json!({"error": why}))).into_response()
}

#[cfg(test)]
mod tests;
