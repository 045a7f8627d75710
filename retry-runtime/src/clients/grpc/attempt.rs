//! One attempt of a gRPC call, below the retry layer: the request's per-attempt headers
//! (`grpc-timeout` for the time left), gRFC A6's transparent retry of a stream the server refused
//! before its application saw it, and the outcome in gRPC's terms (a Trailers-Only response is
//! its `Status`, a transport failure before the response headers is `UNAVAILABLE`).

use std::error::Error as StdError;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use tokio::time::Instant;
use tonic::body::Body;
use tonic::{Code, ConnectError, Status, TimeoutExpired};
use tower_service::Service;

use crate::clients::replay_body::{BodyFailed, BodyNotReplayable, ReplayBody, Retire};

/// The boxed error of a gRPC transport (what tonic's `GrpcService` asks of one).
pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

/// The request one attempt sends: the caller's parts, and a copy of its recorded body.
pub(crate) type AttemptRequest = Request<ReplayBody<Body>>;

/// The end of a call's deadline, in the request's extensions (set by the layer from the
/// caller's `grpc-timeout` or the method's `timeout`), so that each attempt tells the server the
/// time that is left rather than the whole timeout again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallDeadline(pub(crate) Instant);

/// How many copies of a call the cap left behind unsent (in the request's extensions, shared by
/// every copy): gRFC A6's `grpc-previous-rpc-attempts` counts the attempts sent, and the engine
/// counted these when they started (see [`uncount_unsent`](super::hooks::uncount_unsent)).
#[derive(Clone, Debug, Default)]
pub(crate) struct Unsent(pub(crate) Arc<AtomicU32>);

/// The transport wrapped for attempts: `S` is a tonic `Channel` or any
/// `Service<http::Request<tonic::body::Body>>`.
#[derive(Clone, Debug)]
pub(crate) struct Attempts<S> {
    inner: S,
    /// The call's name, for the transparent retry's event.
    name: &'static str,
}

impl<S> Attempts<S> {
    pub(crate) fn new(inner: S, name: &'static str) -> Self {
        Attempts { inner, name }
    }
}

impl<S, B> Service<AttemptRequest> for Attempts<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Status>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        self.inner
            .poll_ready(cx)
            .map_err(|e| transport_status(e.into()))
    }

    fn call(&mut self, request: AttemptRequest) -> Self::Future {
        // The readied transport makes this attempt; a clone takes its place (tower's pattern).
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let name = self.name;
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // A transparent retry needs the same request again: one more copy of the body.
            let again = body.clone();
            let mut hold = Hold::new(&body);
            // gRFC A6: a copy that cannot carry the body past its cap is not sent at all.
            if let Err(left) = poll_fn(|cx| body.poll_send(cx)).await {
                if let Some(Unsent(unsent)) = parts.extensions.get::<Unsent>() {
                    unsent.fetch_add(1, Ordering::Relaxed);
                }
                return Err(left_behind(&left, None));
            }
            let first = inner
                .call(with_time_left(parts.clone(), body))
                .await
                .map_err(Into::into);
            match first {
                Err(error) if refused_before_processing(&*error) => {
                    // gRFC A6: the server refused the stream before its application saw it, so
                    // sending it again cannot do anything twice; once, at once, counted neither
                    // as an attempt nor by the throttle.
                    hold.retire.retire();
                    crate::engine::events::transparent_retry(name);
                    // gRFC A72: the attempt's span says its answer came from a transparent retry.
                    #[cfg(feature = "spans")]
                    crate::engine::context::with_spans(|spans, tag, _| {
                        spans.record_attempt(tag, "transparent-retry", true);
                    });
                    poll_fn(|cx| inner.poll_ready(cx))
                        .await
                        .map_err(|e| transport_status(e.into()))?;
                    // Whether another copy holds the body past the cap (not the refused one).
                    let taken = hold.retire.left_behind();
                    let mut hold = Hold::new(&again);
                    if poll_fn(|cx| again.poll_send(cx)).await.is_err() {
                        return Err(match taken {
                            Some(taken) => left_behind(&taken, None),
                            // The refused stream itself took the body past its cap: it cannot
                            // be sent again, and no other copy has it. The call ends with the
                            // refusal, as gRPC reports it (`UNAVAILABLE`, the transport's
                            // error as its source).
                            None => transport_status(error),
                        });
                    }
                    let outcome = inner.call(with_time_left(parts, again)).await;
                    settle(outcome.map_err(Into::into), &mut hold)
                }
                outcome => settle(outcome, &mut hold),
            }
        })
    }
}

/// An attempt of the call to `method` (the request's path, `/pkg.Service/Method`) is being
/// made, inside the attempt (its copy of the request): the call's RPC attributes, and gRFC A72's
/// attempt attributes (the attempts before it; not a transparent retry, until one is made).
#[cfg(feature = "spans")]
pub(crate) fn attempt_made(method: &str) {
    crate::engine::context::with_spans(|spans, tag, number| {
        if number <= 1 {
            // OpenTelemetry's RPC conventions: the service and the method apart, as in
            // `rpc.service = "grpc.health.v1.Health"`, `rpc.method = "Check"`.
            spans.record_call("rpc.system", "grpc");
            let (service, name) = method
                .trim_start_matches('/')
                .rsplit_once('/')
                .unwrap_or(("", method));
            spans.record_call("rpc.service", service);
            spans.record_call("rpc.method", name);
        }
        spans.record_attempt(
            tag,
            "previous-rpc-attempts",
            i64::from(number.saturating_sub(1)),
        );
        spans.record_attempt(tag, "transparent-retry", false);
    });
}

/// The request of one send: the caller's parts with the time left as `grpc-timeout` (now, not
/// when the attempt was made: a transparent retry comes later), and its copy of the body.
fn with_time_left(mut parts: http::request::Parts, body: ReplayBody<Body>) -> Request<Body> {
    if let Some(CallDeadline(deadline)) = parts.extensions.get::<CallDeadline>().copied() {
        let left = deadline.saturating_duration_since(Instant::now());
        parts
            .headers
            .insert(&GRPC_TIMEOUT, grpc_timeout_value(left));
    }
    Request::from_parts(parts, Body::new(body))
}

/// An attempt's hold on its copy of the body: unless the attempt was answered, the copy is
/// retired when the attempt ends or is dropped (its timeout, a hedge that lost), so that a body
/// pipe that outlives it reads no more under the next attempt, and no copy waiting to be sent
/// ([`ReplayBody::poll_send`]) waits for it.
struct Hold {
    retire: Retire,
    answered: bool,
}

impl Hold {
    fn new(body: &ReplayBody<Body>) -> Self {
        Hold {
            retire: body.retire_handle(),
            answered: false,
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !self.answered {
            self.retire.retire();
        }
    }
}

/// An attempt's outcome in gRPC's terms; a failed attempt's copy of the body is retired (its
/// body pipe may outlive it and must not read on under the next attempt).
fn settle<B>(
    outcome: Result<Response<B>, BoxError>,
    hold: &mut Hold,
) -> Result<Response<Body>, Status>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let settled = match outcome {
        Ok(response) => classify_response(response),
        Err(error) => Err(transport_status(error)),
    };
    let retire = &hold.retire;
    match settled {
        Err(status) => {
            retire.retire();
            // gRFC A6: past the cap the call is committed to the copy that holds the body; no
            // other copy may end it, whatever its transport said (hyper resets the stream of a
            // body that failed with INTERNAL_ERROR, and the body's error is not in the chain).
            Err(match retire.left_behind() {
                Some(left) => left_behind(&left, Some(&status)),
                None => status,
            })
        }
        ok => {
            hold.answered = true;
            // An answer is `OK` (a Trailers-Only answer was read as its `Status` above): the
            // attempt's status, and the call's unless a later attempt answers otherwise.
            #[cfg(feature = "spans")]
            crate::engine::context::with_spans(|spans, tag, _| {
                spans.record_attempt(tag, "rpc.grpc.status_code", 0_i64);
                spans.record_call("rpc.grpc.status_code", 0_i64);
            });
            ok
        }
    }
}

/// The status of a copy left behind by the cap (`left`, with what its attempt saw, if it was
/// sent): `UNAVAILABLE`, with `left` as its source, so that the hooks take it for the client's own
/// doing ([`left_behind_by_the_cap`]) rather than the server's failure.
fn left_behind(left: &BodyNotReplayable, seen: Option<&Status>) -> Status {
    let message = match seen {
        Some(seen) => format!(
            "{left} (this copy saw {:?}: {})",
            seen.code(),
            seen.message()
        ),
        None => format!("{left}: this copy was not sent"),
    };
    let mut status = Status::unavailable(message);
    status.set_source(Arc::new(left.clone()));
    status
}

/// `grpc-timeout`.
pub(crate) static GRPC_TIMEOUT: http::HeaderName = http::HeaderName::from_static("grpc-timeout");

/// An attempt's response in gRPC's terms: a Trailers-Only response (its `grpc-status` in the
/// headers) that is not `OK` is that `Status` (with the server's metadata, such as
/// `grpc-retry-pushback-ms`); any other response has headers, so the call is committed to it.
///
/// A response without `grpc-status` whose HTTP status is not 200 (a proxy's 503, a load
/// balancer's 502) is no gRPC response: its status is the one gRPC's HTTP mapping gives
/// (`UNAVAILABLE` for 429, 502, 503, 504), as tonic's client reads it, and it does not commit
/// the call.
pub(crate) fn classify_response<B>(response: Response<B>) -> Result<Response<Body>, Status>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    match Status::from_header_map(response.headers()) {
        Some(status) if status.code() != Code::Ok => return Err(status),
        None if response.status() != http::StatusCode::OK => {
            return Err(from_http_status(response.status()));
        }
        Some(_) | None => {}
    }
    Ok(response.map(Body::new))
}

/// gRPC's status for an HTTP response that carries none ("HTTP to gRPC Status Code Mapping",
/// doc/http-grpc-status-mapping.md in grpc/grpc).
fn from_http_status(status: http::StatusCode) -> Status {
    let code = match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Status::new(code, format!("HTTP status {status} without a gRPC status"))
}

/// A transport failure before any response headers, as gRPC reports one, with the transport's
/// error as its source: a `Status` the transport returned as it is; an HTTP/2 stream reset by
/// its reason, as gRPC's HTTP/2 mapping says (`CANCEL`: `CANCELLED`; `INTERNAL_ERROR` and the
/// protocol errors: `INTERNAL`, since the server may have acted; `REFUSED_STREAM`:
/// `UNAVAILABLE`; `ENHANCE_YOUR_CALM`: `RESOURCE_EXHAUSTED`); tonic's own timeout
/// (`Endpoint::timeout`): `CANCELLED "Timeout expired"`, as tonic reports it; a failed
/// connection (refused, reset, closed, an I/O error, a lost HTTP/2 connection): `UNAVAILABLE`;
/// anything else: `UNKNOWN`.
pub(crate) fn transport_status(error: BoxError) -> Status {
    let error = match error.downcast::<Status>() {
        Ok(status) => return *status,
        Err(error) => error,
    };
    let code = transport_code(&*error);
    let mut status = Status::new(code, format!("transport error: {error}"));
    status.set_source(Arc::from(error));
    status
}

/// The code of a transport failure (see [`transport_status`]).
fn transport_code(error: &(dyn StdError + 'static)) -> Code {
    if chain(error).any(|e| e.downcast_ref::<BodyFailed>().is_some()) {
        // The caller's request body failed: no retry can help (as gRPC's clients report a
        // cancelled call).
        return Code::Cancelled;
    }
    if let Some(body) = chain(error).find_map(|e| e.downcast_ref::<BodyNotReplayable>()) {
        // This copy's body was taken past the cap by another copy, or retired: the client's own
        // doing (`left_behind_by_the_cap`), whatever wraps it. A request body that failed
        // ends the call as the client's cancellation, as gRPC's clients report it.
        return if body.left_behind() {
            Code::Unavailable
        } else {
            Code::Cancelled
        };
    }
    let mut connection_failed = false;
    for error in chain(error) {
        if let Some(status) = error.downcast_ref::<Status>() {
            return status.code();
        }
        if error.downcast_ref::<TimeoutExpired>().is_some() {
            return Code::Cancelled;
        }
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            // A lost connection (its GOAWAY, an I/O error), or a stream reset for a reason.
            if h2.is_io() || h2.is_go_away() {
                connection_failed = true;
            } else if let Some(reason) = h2.reason() {
                return code_of_reset(reason);
            }
        }
        if error.downcast_ref::<std::io::Error>().is_some()
            || error.downcast_ref::<ConnectError>().is_some()
        {
            connection_failed = true;
        }
        if let Some(hyper) = error.downcast_ref::<hyper::Error>()
            && (hyper.is_closed() || hyper.is_canceled() || hyper.is_incomplete_message())
        {
            connection_failed = true;
        }
    }
    if connection_failed {
        Code::Unavailable
    } else {
        Code::Unknown
    }
}

/// gRPC's code for an HTTP/2 `RST_STREAM` reason (doc/PROTOCOL-HTTP2.md, "Errors").
fn code_of_reset(reason: h2::Reason) -> Code {
    match reason {
        h2::Reason::REFUSED_STREAM => Code::Unavailable,
        h2::Reason::CANCEL => Code::Cancelled,
        h2::Reason::ENHANCE_YOUR_CALM => Code::ResourceExhausted,
        h2::Reason::INADEQUATE_SECURITY => Code::PermissionDenied,
        _ => Code::Internal,
    }
}

/// Whether a copy failed because its body could not be sent: another copy took the body past
/// its replay cap, or its attempt was over (a [`BodyNotReplayable`] in the status's sources).
/// Not the server's failure.
pub(crate) fn left_behind_by_the_cap(status: &Status) -> bool {
    let Some(source) = status.source() else {
        return false;
    };
    let source: &(dyn StdError + 'static) = source;
    chain(source)
        .filter_map(|e| e.downcast_ref::<BodyNotReplayable>())
        .any(BodyNotReplayable::left_behind)
}

/// An error and its sources, looking inside an `io::Error` (whose `source()` skips the error it
/// wraps).
pub(super) fn chain<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(
        Some(error),
        |&error: &&'a (dyn StdError + 'static)| match error.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn StdError + 'static)),
            None => error.source(),
        },
    )
}

/// Whether a transport failure is one gRFC A6 retries transparently: the server reset the
/// HTTP/2 stream with `REFUSED_STREAM`, which says its application never saw it. Found down the
/// error's sources (tonic's transport error wraps hyper's, which wraps h2's). (A `GOAWAY` is
/// not taken for one: h2 does not say whether the stream was above its last stream id.)
pub(crate) fn refused_before_processing(error: &(dyn StdError + 'static)) -> bool {
    chain(error)
        .filter_map(|e| e.downcast_ref::<h2::Error>())
        .any(|h2| !h2.is_go_away() && h2.reason() == Some(h2::Reason::REFUSED_STREAM))
}

/// The `grpc-timeout` value for `left` (gRPC over HTTP/2: at most 8 digits and a unit), rounded
/// up so that a server never sees less time than is left; an hour-scale value in whole
/// milliseconds or coarser.
pub(crate) fn grpc_timeout_value(left: Duration) -> HeaderValue {
    const MAX: u128 = 99_999_999;
    let nanos = left.as_nanos();
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (per, unit) in units {
        let value = nanos.div_ceil(per);
        if value <= MAX {
            return HeaderValue::from_str(&format!("{value}{unit}"))
                .expect("digits and a letter are a valid header value");
        }
    }
    HeaderValue::from_static("99999999H")
}

/// The caller's `grpc-timeout` (what tonic's `Request::set_timeout` sets): up to 8 digits and
/// a unit (`H`, `M`, `S`, `m`, `u`, `n`). `None` when absent or malformed (gRPC then ignores it).
pub(crate) fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(&GRPC_TIMEOUT)?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(value * 3600),
        "M" => Duration::from_secs(value * 60),
        "S" => Duration::from_secs(value),
        "m" => Duration::from_millis(value),
        "u" => Duration::from_micros(value),
        "n" => Duration::from_nanos(value),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_round_trips_and_rounds_up() {
        let ms = Duration::from_millis;
        for left in [
            Duration::ZERO,
            Duration::from_nanos(1),
            ms(1),
            ms(300),
            Duration::from_secs(5),
            Duration::from_secs(100_000),
            Duration::from_secs(10 * 365 * 24 * 3600),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(&GRPC_TIMEOUT, grpc_timeout_value(left));
            let back = grpc_timeout(&headers).expect("a valid grpc-timeout");
            assert!(back >= left, "{left:?} became {back:?}");
            let text = headers[&GRPC_TIMEOUT].to_str().unwrap().to_owned();
            assert!(text.len() <= 9, "{text}");
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            &GRPC_TIMEOUT,
            grpc_timeout_value(Duration::from_nanos(1_500)),
        );
        assert_eq!(headers[&GRPC_TIMEOUT], "1500n");
    }

    #[test]
    fn malformed_grpc_timeouts_are_ignored() {
        for bad in ["", "S", "123456789S", "12s", "-1S", "1.5S", "10X"] {
            let mut headers = HeaderMap::new();
            headers.insert(&GRPC_TIMEOUT, HeaderValue::from_str(bad).unwrap());
            assert_eq!(grpc_timeout(&headers), None, "{bad:?}");
        }
        assert_eq!(grpc_timeout(&HeaderMap::new()), None);
    }

    #[test]
    fn a_trailers_only_response_is_its_status() {
        let response = Response::builder()
            .header("grpc-status", "14")
            .header("grpc-message", "down")
            .header("grpc-retry-pushback-ms", "300")
            .body(Body::empty())
            .unwrap();
        let status = classify_response(response).unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "down");
        assert_eq!(
            status.metadata().get("grpc-retry-pushback-ms").unwrap(),
            "300"
        );

        let ok = Response::builder()
            .header("grpc-status", "0")
            .body(Body::empty())
            .unwrap();
        assert!(classify_response(ok).is_ok());
        let headers_only = Response::builder().header("content-type", "application/grpc");
        assert!(classify_response(headers_only.body(Body::empty()).unwrap()).is_ok());
    }

    #[test]
    fn a_transport_failure_is_unavailable_with_its_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let status = transport_status(Box::new(io));
        assert_eq!(status.code(), Code::Unavailable);
        assert!(status.source().is_some());
        let kept = transport_status(Box::new(Status::aborted("conflict")));
        assert_eq!(kept.code(), Code::Aborted);
    }

    #[test]
    fn only_a_refused_stream_is_retried_transparently() {
        let refused: h2::Error = h2::Reason::REFUSED_STREAM.into();
        assert!(refused_before_processing(&refused));
        let wrapped = std::io::Error::other(refused);
        assert!(refused_before_processing(&wrapped));
        let reset: h2::Error = h2::Reason::INTERNAL_ERROR.into();
        assert!(!refused_before_processing(&reset));
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(!refused_before_processing(&io));
    }
}
