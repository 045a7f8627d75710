//! [`ReplayBodyLayer`] (feature `http`): makes a streaming request body replayable in front of
//! a [`RetryLayer::http`] layer.
//!
//! [`RetryLayer::http`]: super::layer::RetryLayer::http

use http::Request;

use crate::clients::replay_body::{DEFAULT_REPLAY_CAP, ReplayBody};

/// A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) that makes a streaming request body replayable,
/// in front of a [`RetryLayer::http`] layer: it takes a plain `http::Request<B>` and gives
/// the service it wraps the same request with a
/// [`ReplayBody<B>`](crate::http::ReplayBody) (made by
/// [`ReplayBody::request`](crate::http::ReplayBody::request), with the layer's cap), which
/// records up to the cap what the first attempt sends and replays it to the next. Past the
/// cap the call is committed to its current attempt: not retried, nor hedged. See
/// [`RetryLayer::http`] for a full example.
///
/// ```
/// use reattempt::RetryPolicy;
/// use reattempt::http::DEFAULT_REPLAY_CAP;
/// use reattempt::tower::{ReplayBodyLayer, RetryLayer};
///
/// let replay = ReplayBodyLayer::default();
/// assert_eq!(replay.cap(), DEFAULT_REPLAY_CAP);
/// let retry = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
/// // With tower's `ServiceBuilder`: `.layer(replay).layer(retry).service(client)`.
/// # let _ = (ReplayBodyLayer::new(2 << 20), retry);
/// ```
///
/// [`RetryLayer::http`]: super::layer::RetryLayer::http
#[derive(Debug, Clone, Copy)]
pub struct ReplayBodyLayer {
    cap: usize,
}

impl ReplayBodyLayer {
    /// Records at most `cap` bytes of each request's body.
    ///
    /// ```
    /// let replay = reattempt::tower::ReplayBodyLayer::new(1 << 20);
    /// assert_eq!(replay.cap(), 1_048_576);
    /// ```
    pub fn new(cap: usize) -> Self {
        ReplayBodyLayer { cap }
    }

    /// The most bytes of a body recorded for a replay.
    ///
    /// ```
    /// assert_eq!(reattempt::tower::ReplayBodyLayer::new(10).cap(), 10);
    /// ```
    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// A cap of [`DEFAULT_REPLAY_CAP`](crate::http::DEFAULT_REPLAY_CAP) (64 KiB).
impl Default for ReplayBodyLayer {
    fn default() -> Self {
        ReplayBodyLayer::new(DEFAULT_REPLAY_CAP)
    }
}

impl<S> tower_layer::Layer<S> for ReplayBodyLayer {
    type Service = ReplayBodyService<S>;
    fn layer(&self, inner: S) -> ReplayBodyService<S> {
        ReplayBodyService {
            inner,
            cap: self.cap,
        }
    }
}

/// The service a [`ReplayBodyLayer`] makes: it wraps each request's body in a
/// [`ReplayBody`](crate::http::ReplayBody) and calls the service inside.
///
/// ```
/// use reattempt::RetryPolicy;
/// use reattempt::tower::{HttpRetryService, ReplayBodyLayer, ReplayBodyService, RetryLayer};
/// use tower::Layer;
///
/// /// A client over any `Service<http::Request<ReplayBody<B>>>` (hyper-util's).
/// struct Uploads<S> {
///     http: ReplayBodyService<HttpRetryService<S>>,
/// }
///
/// impl<S> Uploads<S> {
///     fn new(client: S) -> Self {
///         let retry = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
///         Uploads { http: ReplayBodyLayer::default().layer(retry.layer(client)) }
///     }
/// }
/// # struct Client;
/// # let _ = Uploads::new(Client).http;
/// ```
#[derive(Debug, Clone)]
pub struct ReplayBodyService<S> {
    inner: S,
    cap: usize,
}

impl<S, B> tower_service::Service<Request<B>> for ReplayBodyService<S>
where
    S: tower_service::Service<Request<ReplayBody<B>>>,
    B: http_body::Body<Data = bytes::Bytes>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    #[inline]
    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> S::Future {
        self.inner.call(ReplayBody::request(request, self.cap))
    }
}
