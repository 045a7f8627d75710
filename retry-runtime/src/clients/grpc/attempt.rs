//! One attempt of a gRPC call, below the retry layer: the request's per-attempt headers
//! (`grpc-timeout` for the time left), gRFC A6's transparent retry of a stream the server refused
//! before its application saw it, and the outcome in gRPC's terms (a Trailers-Only response is
//! its `Status`, a transport failure before the response headers is `UNAVAILABLE`).

use std::error::Error as StdError;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use tokio::time::Instant;
use tonic::body::Body;
use tonic::{Code, Status};
use tower_service::Service;

use crate::clients::replay_body::ReplayBody;

/// The boxed error of a gRPC transport (what tonic's `GrpcService` asks of one).
pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

/// The request one attempt sends: the caller's parts, and a copy of its recorded body.
pub(crate) type AttemptRequest = Request<ReplayBody<Body>>;

/// The end of a call's deadline, in the request's extensions (set by the layer from the
/// caller's `grpc-timeout` or the method's `timeout`), so that each attempt tells the server the
/// time that is left rather than the whole timeout again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallDeadline(pub(crate) Instant);

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
            let (mut parts, body) = request.into_parts();
            if let Some(CallDeadline(deadline)) = parts.extensions.get::<CallDeadline>().copied() {
                let left = deadline.saturating_duration_since(Instant::now());
                parts
                    .headers
                    .insert(&GRPC_TIMEOUT, grpc_timeout_value(left));
            }
            // A transparent retry needs the same request again: one more copy of the body.
            let again = Request::from_parts(parts.clone(), body.clone());
            let first = inner
                .call(Request::from_parts(parts, Body::new(body)))
                .await
                .map_err(Into::into);
            let outcome = match first {
                Err(error) => {
                    if refused_before_processing(&*error) {
                        // gRFC A6: the server refused the stream before its application saw
                        // it, so sending it again cannot do anything twice; once, at once,
                        // counted neither as an attempt nor by the throttle.
                        crate::engine::events::transparent_retry(name);
                        poll_fn(|cx| inner.poll_ready(cx))
                            .await
                            .map_err(|e| transport_status(e.into()))?;
                        let (parts, body) = again.into_parts();
                        inner
                            .call(Request::from_parts(parts, Body::new(body)))
                            .await
                            .map_err(Into::into)
                    } else {
                        Err(error)
                    }
                }
                Ok(response) => Ok(response),
            };
            match outcome {
                Ok(response) => classify_response(response),
                Err(error) => Err(transport_status(error)),
            }
        })
    }
}

/// `grpc-timeout`.
pub(crate) static GRPC_TIMEOUT: http::HeaderName = http::HeaderName::from_static("grpc-timeout");

/// An attempt's response in gRPC's terms: a Trailers-Only response (its `grpc-status` in the
/// headers) that is not `OK` is that `Status` (with the server's metadata, such as
/// `grpc-retry-pushback-ms`); any other response has headers, so the call is committed to it.
pub(crate) fn classify_response<B>(response: Response<B>) -> Result<Response<Body>, Status>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    if let Some(status) = Status::from_header_map(response.headers())
        && status.code() != Code::Ok
    {
        return Err(status);
    }
    Ok(response.map(Body::new))
}

/// A transport failure before any response headers, as gRPC reports one: `UNAVAILABLE`, with
/// the transport's error as its source. A `Status` the transport returned is kept as it is.
pub(crate) fn transport_status(error: BoxError) -> Status {
    match error.downcast::<Status>() {
        Ok(status) => *status,
        Err(error) => {
            let mut status = Status::unavailable(format!("transport error: {error}"));
            status.set_source(Arc::from(error));
            status
        }
    }
}

/// Whether a transport failure is one gRFC A6 retries transparently: the HTTP/2 stream was
/// reset with `REFUSED_STREAM`, or the connection's `GOAWAY` (graceful, `NO_ERROR`) came before
/// the server took the stream, both of which say the server's application never saw it. Found
/// down the error's sources (tonic's transport error wraps hyper's, which wraps h2's).
pub(crate) fn refused_before_processing(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            let reason = h2.reason();
            return reason == Some(h2::Reason::REFUSED_STREAM)
                || (h2.is_go_away() && h2.is_remote() && reason == Some(h2::Reason::NO_ERROR));
        }
        // An `io::Error`'s `source()` skips the error it wraps: look inside it.
        next = match error.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn StdError + 'static)),
            None => error.source(),
        };
    }
    false
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
