//! Retrying at one layer across HTTP (feature `http`): the request header that carries "the
//! caller still has attempts left" ([`OUTER_ATTEMPTS_LEFT`]), written by the clients and read by
//! the servers, so that [`one_layer`](crate::RetryPolicyBuilder::one_layer) works between
//! services as it does between calls in one process.
//!
//! `one_layer` reads the calls around it from the retry context, which follows the poll: a
//! service's handler runs in its own task, where the client that sent the request is not in
//! sight. So the client says it in the request, and the server puts it back:
//! - client side: a request made inside an attempt of a call that has attempts left after it (or
//!   inside a handler whose caller has) carries `retry-outer-attempts-left: n`. The tower
//!   [`RetryLayer`](crate::tower::RetryLayer)'s `.http()` requests and the reqwest-middleware
//!   [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware) set it on every attempt;
//!   code that builds its own requests (inside a `#[retryable]` fn) adds [`outer_header`].
//! - server side: [`OuterRetryLayer`](crate::tower::OuterRetryLayer) (feature `tower`), or
//!   [`outer_call`] from any framework's middleware, reads it ([`outer_attempts_left`]) and polls
//!   the handler as if nested in the caller's attempt. A `one_layer` call made there makes one
//!   attempt, and the requests made there carry the header on.
//!
//! A 3-deep chain of `max_attempts = 3` services with `one_layer` on the inner two sends 7
//! requests to a dead leaf per top-level call, instead of 27 (BENCHMARKS.md, "Over HTTP").
//!
//! ```
//! // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     use http::HeaderMap;
//!     use reattempt::RetryPolicy;
//!     use reattempt::http::{OUTER_ATTEMPTS_LEFT, outer_attempts_left, outer_call, outer_header};
//!
//!     // The client: attempt 1 of 3 has 2 left, and says so.
//!     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
//!     let mut headers = HeaderMap::new();
//!     policy
//!         .retry(|| {
//!             if let Some(value) = outer_header() {
//!                 headers.insert(OUTER_ATTEMPTS_LEFT, value);
//!             }
//!             async { Ok::<_, std::io::Error>(()) }
//!         })
//!         .await
//!         .unwrap();
//!     assert_eq!(headers[OUTER_ATTEMPTS_LEFT], "2");
//!
//!     // The server: a `one_layer` call in the handler makes one attempt, the caller retries.
//!     let one_layer = RetryPolicy::builder().max_attempts(3).one_layer(true).build().unwrap();
//!     let mut attempts = 0;
//!     let handler = one_layer.retry(|| {
//!         attempts += 1;
//!         async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) }
//!     });
//!     assert!(outer_call(outer_attempts_left(&headers), handler).await.is_err());
//!     assert_eq!(attempts, 1);
//! }
//! ```

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderMap, HeaderValue};
use pin_project_lite::pin_project;

use crate::engine::context;

/// The request header that says the caller still has attempts left after this request's
/// (`retry-outer-attempts-left`, lower case as HTTP/2 sends it): its value is how many, in
/// decimal ASCII digits. Absent, or `0`, the caller will not retry (it is on its last attempt,
/// or does not retry at all): the server's calls retry normally.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert(reattempt::http::OUTER_ATTEMPTS_LEFT, http::HeaderValue::from(2u32));
/// assert_eq!(reattempt::http::outer_attempts_left(&headers), Some(2));
/// ```
pub const OUTER_ATTEMPTS_LEFT: &str = "retry-outer-attempts-left";

/// The [`OUTER_ATTEMPTS_LEFT`] value for a request made here, or `None` when no call around this
/// point will retry (no header to send).
///
/// Inside an attempt of a call that has attempts left after it, that number; on a call's last
/// attempt, the attempts left of the innermost call around it that has any (a `#[retryable]` fn
/// called inside another's attempt, or a handler run by
/// `tower::OuterRetryLayer` for a caller that has some); in a
/// `#[recover]` fallback, the calls around it only. The tower `tower::RetryLayer`
/// (`.http()`) and the `reqwest_middleware::RetryMiddleware` set it
/// themselves; call it when you build the request yourself:
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use reattempt::RetryPolicy;
///     use reattempt::http::outer_header;
///
///     assert_eq!(outer_header(), None, "no call: nothing to say");
///     let policy = RetryPolicy::builder()
///         .max_attempts(2)
///         .delay(std::time::Duration::from_millis(1))
///         .build()
///         .unwrap();
///     let mut sent = vec![];
///     let _ = policy
///         .retry(|| {
///             // e.g. `request = request.header(OUTER_ATTEMPTS_LEFT, value)` with reqwest
///             sent.push(outer_header());
///             async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut)) }
///         })
///         .await;
///     assert_eq!(sent, [Some(http::HeaderValue::from(1u32)), None], "none on the last attempt");
/// }
/// ```
pub fn outer_header() -> Option<HeaderValue> {
    context::outer_attempts_left().map(HeaderValue::from)
}

/// The attempts the caller has left, read from a request's [`OUTER_ATTEMPTS_LEFT`] header.
///
/// A value is decimal ASCII digits, surrounding whitespace allowed; a number too large for a
/// `u32` saturates. Anything else (a sign, a fraction, text, an empty or non-ASCII value) is
/// ignored: `None`, as if the header were absent, so a garbled header makes the server's calls
/// retry normally and never fails the request. Of several such headers, the first that parses
/// is used.
///
/// ```
/// use http::{HeaderMap, HeaderValue};
/// use reattempt::http::{OUTER_ATTEMPTS_LEFT, outer_attempts_left};
///
/// let mut headers = HeaderMap::new();
/// assert_eq!(outer_attempts_left(&headers), None);
/// headers.append(OUTER_ATTEMPTS_LEFT, HeaderValue::from_static("lots"));
/// assert_eq!(outer_attempts_left(&headers), None, "ignored");
/// headers.append(OUTER_ATTEMPTS_LEFT, HeaderValue::from_static(" 2 "));
/// assert_eq!(outer_attempts_left(&headers), Some(2));
/// ```
#[must_use]
pub fn outer_attempts_left(headers: &HeaderMap) -> Option<u32> {
    headers
        .get_all(OUTER_ATTEMPTS_LEFT)
        .iter()
        .find_map(parse_attempts_left)
}

/// One [`OUTER_ATTEMPTS_LEFT`] value, read as [`outer_attempts_left`] describes.
fn parse_attempts_left(value: &HeaderValue) -> Option<u32> {
    let count = crate::classify::hints::digits(value.to_str().ok()?.trim())?;
    Some(u32::try_from(count).unwrap_or(u32::MAX))
}

/// Polls `future` as if nested in an attempt of a caller that has `attempts_left` attempts left
/// (what [`outer_attempts_left`] read from its request): the server side of [`OUTER_ATTEMPTS_LEFT`]
/// for any framework, e.g. from an axum `middleware::from_fn`
/// (`outer_call(outer_attempts_left(request.headers()), next.run(request)).await`). `None` or
/// `Some(0)`: the future is polled as it is. Anything `IntoFuture` goes (a `policy.retry(..)`).
/// See [`OuterCall`].
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     use http::{HeaderMap, HeaderValue};
///     use reattempt::http::{OUTER_ATTEMPTS_LEFT, outer_attempts_left, outer_call, outer_header};
///
///     let mut request_headers = HeaderMap::new();
///     request_headers.insert(OUTER_ATTEMPTS_LEFT, HeaderValue::from_static("1"));
///     // What the handler's own requests carry on:
///     let left = outer_attempts_left(&request_headers);
///     let passed_on = outer_call(left, async { outer_header() }).await;
///     assert_eq!(passed_on, Some(HeaderValue::from(1u32)));
/// }
/// ```
pub fn outer_call<F: IntoFuture>(
    attempts_left: Option<u32>,
    future: F,
) -> OuterCall<F::IntoFuture> {
    OuterCall {
        attempts_left: attempts_left.unwrap_or(0),
        future: future.into_future(),
    }
}

pin_project! {
    /// A future polled inside an *outer frame*: as if nested in an attempt of a caller that has
    /// attempts left (made by [`outer_call`] or
    /// `tower::OuterRetryLayer`).
    ///
    /// Each poll of the future (and of what it awaits in place) sees "a call around this one has
    /// attempts left": a call with [`one_layer`](crate::RetryPolicyBuilder::one_layer) made in
    /// it makes one attempt, and a request made in it carries [`OUTER_ATTEMPTS_LEFT`] on. It
    /// adds no [`context()`](crate::context()) (no attempt of this process) and no deadline. A
    /// task spawned from it is polled elsewhere and does not see the frame.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::http::{outer_call, outer_header};
    ///
    ///     let seen = outer_call(Some(2), async { outer_header() }).await;
    ///     assert_eq!(seen, Some(http::HeaderValue::from(2u32)), "passed on");
    ///     assert_eq!(outer_call(Some(0), async { outer_header() }).await, None);
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).one_layer(true).build().unwrap();
    ///     let mut attempts = 0;
    ///     let call = policy.retry(|| {
    ///         attempts += 1;
    ///         async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) }
    ///     });
    ///     let _ = outer_call(None, call).await;
    ///     assert_eq!(attempts, 3, "no caller that retries: this call does");
    /// }
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    #[derive(Debug)]
    pub struct OuterCall<F> {
        attempts_left: u32,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for OuterCall<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let future = this.future;
        context::enter_outer(*this.attempts_left, || future.poll(cx))
    }
}

#[cfg(feature = "tower")]
pub use self::layer::{OuterRetryLayer, OuterRetryService};

/// The server side as a tower layer (features `tower` and `http`).
#[cfg(feature = "tower")]
mod layer {
    use std::task::{Context, Poll};

    use http::Request;
    use tower_layer::Layer;
    use tower_service::Service;

    use super::{OuterCall, outer_attempts_left};
    use crate::engine::context;

    /// A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) for a server: reads each request's
    /// [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) and runs the service's call and
    /// its response future as if nested in the caller's attempt ([`OuterCall`]), so that a call
    /// with [`one_layer`](crate::RetryPolicyBuilder::one_layer) made in the handler makes one
    /// attempt while the caller will retry, and retries normally when the header is absent,
    /// says `0` (the caller is on its last attempt) or does not parse (ignored, see
    /// [`outer_attempts_left`](crate::http::outer_attempts_left)). Requests made in the handler
    /// carry the header on. The request itself is passed on unchanged.
    ///
    /// With axum: `Router::new().route(..).layer(OuterRetryLayer::new())`.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::convert::Infallible;
    ///     use std::future::{Future, IntoFuture};
    ///     use std::pin::Pin;
    ///     use std::task::{Context, Poll};
    ///     use http::Request;
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::http::OUTER_ATTEMPTS_LEFT;
    ///     use reattempt::tower::OuterRetryLayer;
    ///     use tower::Layer;
    ///     use tower::Service;
    ///
    ///     /// A handler whose dependency is down: how many attempts its `one_layer` call made.
    ///     #[derive(Clone)]
    ///     struct Handler;
    ///     impl Service<Request<()>> for Handler {
    ///         type Response = u32;
    ///         type Error = Infallible;
    ///         type Future = Pin<Box<dyn Future<Output = Result<u32, Infallible>>>>;
    ///         fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
    ///             Poll::Ready(Ok(()))
    ///         }
    ///         fn call(&mut self, _: Request<()>) -> Self::Future {
    ///             Box::pin(async {
    ///                 let policy = RetryPolicy::builder().max_attempts(3).one_layer(true).build().unwrap();
    ///                 let mut attempts = 0;
    ///                 let _ = policy
    ///                     .retry(|| {
    ///                         attempts += 1;
    ///                         async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)) }
    ///                     })
    ///                     .await;
    ///                 Ok(attempts)
    ///             })
    ///         }
    ///     }
    ///
    ///     let mut server = OuterRetryLayer::new().layer(Handler);
    ///     let from = |left: &str| Request::builder().header(OUTER_ATTEMPTS_LEFT, left).body(()).unwrap();
    ///     assert_eq!(server.call(from("2")).await.unwrap(), 1, "the caller retries");
    ///     assert_eq!(server.call(from("0")).await.unwrap(), 3, "its last attempt: this call retries");
    ///     assert_eq!(server.call(from("x")).await.unwrap(), 3, "ignored");
    ///     assert_eq!(server.call(Request::new(())).await.unwrap(), 3);
    /// }
    /// ```
    #[derive(Debug, Clone, Copy, Default)]
    pub struct OuterRetryLayer {
        _private: (),
    }

    impl OuterRetryLayer {
        /// The layer (it has no settings).
        ///
        /// ```
        /// let layer = reattempt::tower::OuterRetryLayer::new();
        /// # let _ = layer;
        /// ```
        pub const fn new() -> Self {
            OuterRetryLayer { _private: () }
        }
    }

    impl<S> Layer<S> for OuterRetryLayer {
        type Service = OuterRetryService<S>;

        fn layer(&self, inner: S) -> OuterRetryService<S> {
            OuterRetryService { inner }
        }
    }

    /// The service [`OuterRetryLayer`] makes: `inner`, each call run as if nested in the
    /// caller's attempt (see the layer).
    ///
    /// ```
    /// use tower::Layer;
    ///
    /// #[derive(Clone)]
    /// struct Handler;
    /// let service: reattempt::tower::OuterRetryService<Handler> =
    ///     reattempt::tower::OuterRetryLayer::new().layer(Handler);
    /// # let _ = service;
    /// ```
    #[derive(Debug, Clone, Copy)]
    pub struct OuterRetryService<S> {
        inner: S,
    }

    impl<S, B> Service<Request<B>> for OuterRetryService<S>
    where
        S: Service<Request<B>>,
    {
        type Response = S::Response;
        type Error = S::Error;
        type Future = OuterCall<S::Future>;

        #[inline]
        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, request: Request<B>) -> Self::Future {
            let left = outer_attempts_left(request.headers());
            // The call too: a service may start its work there.
            let inner = &mut self.inner;
            let future = context::enter_outer(left.unwrap_or(0), || inner.call(request));
            super::outer_call(left, future)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_does_not_parse_is_ignored() {
        let read = |values: &[&'static str]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(OUTER_ATTEMPTS_LEFT, HeaderValue::from_static(v));
            }
            outer_attempts_left(&headers)
        };
        assert_eq!(read(&[]), None);
        assert_eq!(read(&["2"]), Some(2));
        assert_eq!(read(&["0"]), Some(0));
        assert_eq!(read(&["\t7 "]), Some(7));
        assert_eq!(read(&["99999999999999999999"]), Some(u32::MAX));
        for bad in ["", " ", "-1", "+1", "1.5", "two", "1 2", "0x2"] {
            assert_eq!(read(&[bad]), None, "{bad:?}");
        }
        assert_eq!(read(&["x", "3"]), Some(3), "the first that parses");
        let mut headers = HeaderMap::new();
        headers.insert(
            OUTER_ATTEMPTS_LEFT,
            HeaderValue::from_bytes(b"\xff2").unwrap(),
        );
        assert_eq!(outer_attempts_left(&headers), None, "not ASCII");
    }

    #[test]
    fn the_header_says_what_the_frames_say() {
        assert_eq!(outer_header(), None);
        context::enter_outer(3, || {
            assert_eq!(outer_header(), Some(HeaderValue::from(3u32)));
        });
        context::enter_outer(0, || assert_eq!(outer_header(), None));
    }
}
