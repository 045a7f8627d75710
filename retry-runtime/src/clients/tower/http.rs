//! The ready HTTP classification (feature `http`): [`RetryLayer::http`], the request copies
//! and HTTP's safety rule ([`HttpRequests`]), and the response hooks it sets.

use std::error::Error;
use std::time::Duration;

use http::{Request, Response};

use super::hooks::Classify;
use super::layer::{RetryLayer, Settings};
use super::replay::{Cloned, Replay, RetryRequest, SaysIdempotent};
use super::service::RetryService;
use crate::classify::Transient;
use crate::classify::http::{
    Attempts, SafetyRule, Verdict, never_sent, not_processed, safe_to_resend,
};
use crate::clients::replay_body::Committed;
use crate::drivers::timeout::ElapsedInto;
use crate::engine::hooks::{DelayHook, DelaySlot, ErrorHook, OkHook, Unset};

/// Copies an `http::Request<B>` with a `Clone` body for each attempt (method, URI, version,
/// headers, extensions and body), and with [`RetryLayer::idempotency_key_header`] sets its
/// `Idempotency-Key` header to the call's key (the same on every attempt) unless the
/// request has one. With [`RetryLayer::outer_attempts_header`], while the call (or one
/// around it) has attempts left after this one, it sets
/// [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) to how many, so that a server
/// behind [`OuterRetryLayer`](super::OuterRetryLayer) leaves the retrying to this call
/// (`one_layer`).
///
/// It also decides whether a request is sent again ([`RetryRequest`]): HTTP's safety rule
/// (see [`RetryLayer::http`]), or `F`, the hook of [`RetryLayer::retry_request`]. And it
/// records the number of attempts made in the final response's extensions
/// ([`Attempts`](crate::http::Attempts)).
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpRequests<F = DefaultRule> {
    safety: SafetyRule,
    outer_attempts: bool,
    rule: F,
}

/// The decision of a layer without a [`retry_request`](RetryLayer::retry_request) hook:
/// [`Verdict::retry`].
///
/// ```
/// use reattempt::http::Verdict;
/// use reattempt::tower::{DefaultRule, RequestHook};
///
/// let post = http::Request::post("http://api.test/orders").body(()).unwrap();
/// let lost: Result<&http::Response<()>, &std::io::Error> =
///     Err(&std::io::ErrorKind::ConnectionReset.into());
/// let verdict = Verdict { retryable: true, safe: false };
/// assert!(!DefaultRule.decide(&post, lost, verdict));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRule;

/// A layer's [`RetryLayer::http`] layer, its hooks and its request copies as `.http()` sets
/// them, with no guard: a name for a struct's field (with guards or other hooks, spell
/// [`RetryLayer`]'s parameters out).
///
/// ```
/// use reattempt::RetryPolicy;
/// use reattempt::tower::{HttpRetryLayer, RetryLayer};
///
/// struct Clients {
///     retry: HttpRetryLayer,
/// }
/// let policy = RetryPolicy::builder().build().unwrap();
/// let clients = Clients { retry: RetryLayer::new(policy).http().idempotency_key_header() };
/// # let _ = clients.retry;
/// ```
pub type HttpRetryLayer<C = ElapsedInto, F = DefaultRule> =
    RetryLayer<HttpHooks, C, HttpRequests<F>>;

/// The service an [`HttpRetryLayer`] makes, to store in a struct's field:
///
/// ```
/// use reattempt::RetryPolicy;
/// use reattempt::tower::{HttpRetryService, RetryLayer};
/// use tower::Layer;
///
/// /// A client over any `Service<http::Request<B>>` (hyper-util's).
/// struct Api<S> {
///     http: HttpRetryService<S>,
/// }
///
/// impl<S> Api<S> {
///     fn new(client: S) -> Self {
///         let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
///         Api { http: layer.layer(client) }
///     }
/// }
/// # struct Client;
/// # let _ = Api::new(Client).http;
/// ```
pub type HttpRetryService<S, C = ElapsedInto, F = DefaultRule> =
    RetryService<S, HttpHooks, C, HttpRequests<F>>;

impl<Body: Clone, F> Replay<Request<Body>> for HttpRequests<F> {
    fn replay(&self, request: &Request<Body>) -> Request<Body> {
        let mut copy = Request::new(request.body().clone());
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        // Inside the attempt: its span, and the call's, take the request's attributes.
        #[cfg(feature = "spans")]
        crate::clients::http_spans::request_sent(request.method(), request.uri());
        crate::http::set_attempt_headers(
            copy.headers_mut(),
            self.safety.idempotency_key,
            self.outer_attempts,
        );
        copy
    }
}

/// The error `E` as a `dyn Error`, when it is one of the types that can hold another's:
/// `tower::BoxError` (`Box<dyn Error + Send + Sync>`) and its siblings, `std::io::Error`,
/// (feature `reqwest`) `reqwest::Error`. Other types' sources cannot be seen.
///
/// `E` is told by its identity without lifetimes (`typeid`), not by `Any`: an `E: 'static`
/// bound here is a bound of the layer's `Service` impl, and rustc checks a spawned async
/// block's `Send` for every lifetime of the types it holds, where `Box<dyn Error + Send +
/// Sync + '_>` is not `'static`: the HTTP guide's stack (`.http()` over `map_err(BoxError::from)`)
/// then failed to compile inside `tokio::spawn` ("implementation of `From` is not general
/// enough"; `tests/spawned_stacks.rs` holds it).
#[allow(
    unsafe_code,
    reason = "a lifetime the type system cannot see; see the SAFETY notes"
)]
fn as_error<E>(error: &E) -> Option<&(dyn Error + 'static)> {
    let id = typeid::of::<E>();
    let pointer = std::ptr::from_ref(error);
    // SAFETY (the three boxes): `E` is `Box<dyn Error + … + 'x>` for some `'x` (the ids
    // ignore lifetimes), the same layout as the `'static` box. The object is seen as
    // `'static` only for the borrow of `error`, by `never_sent`, which asks for its sources
    // (`'static` in any case) and downcasts it to lifetime-free types (`io::Error`,
    // `reqwest::Error`): nothing borrowed for `'x` can be taken out longer.
    if id == typeid::of::<Box<dyn Error + Send + Sync>>() {
        let boxed = unsafe { &*pointer.cast::<Box<dyn Error + Send + Sync>>() };
        return Some(&**boxed);
    }
    if id == typeid::of::<Box<dyn Error + Send>>() {
        let boxed = unsafe { &*pointer.cast::<Box<dyn Error + Send>>() };
        return Some(&**boxed);
    }
    if id == typeid::of::<Box<dyn Error>>() {
        let boxed = unsafe { &*pointer.cast::<Box<dyn Error>>() };
        return Some(&**boxed);
    }
    // SAFETY: `E` is `io::Error`, which has no lifetime: the cast is exact.
    if id == typeid::of::<std::io::Error>() {
        return Some(unsafe { &*pointer.cast::<std::io::Error>() });
    }
    // SAFETY: `E` is `reqwest::Error`, which has no lifetime: the cast is exact.
    #[cfg(feature = "reqwest")]
    if id == typeid::of::<reqwest::Error>() {
        return Some(unsafe { &*pointer.cast::<reqwest::Error>() });
    }
    None
}

impl<F> HttpRequests<F> {
    /// The [`Verdict`] on an outcome of `request`.
    fn verdict<B, B2, E>(
        &self,
        request: &Request<B>,
        outcome: Result<&Response<B2>, &E>,
        retryable: bool,
    ) -> Verdict {
        let not_acted_on = match outcome {
            Ok(response) => not_processed(response.status()),
            Err(error) => as_error(error).is_some_and(never_sent),
        };
        let safe = safe_to_resend(
            request.method(),
            request.headers(),
            self.safety,
            not_acted_on,
        );
        Verdict { retryable, safe }
    }
}

/// A hook of [`RetryLayer::retry_request`]: a closure
/// `Fn(&Request<B>, Result<&Response<B2>, &E>, Verdict) -> bool`, or [`DefaultRule`] (none:
/// [`Verdict::retry`]).
///
/// ```
/// use reattempt::http::Verdict;
/// use reattempt::tower::RequestHook;
///
/// type Response = http::Response<()>;
/// let search_is_safe =
///     |req: &http::Request<()>, _: Result<&Response, &std::io::Error>, v: Verdict| {
///         v.retryable && (v.safe || req.uri().path() == "/search")
///     };
/// let search = http::Request::post("http://api.test/search").body(()).unwrap();
/// let unavailable = http::Response::builder().status(500).body(()).unwrap();
/// let verdict = Verdict { retryable: true, safe: false };
/// assert!(search_is_safe.decide(&search, Ok(&unavailable), verdict));
/// ```
pub trait RequestHook<Req, T, E> {
    /// Whether to retry after `outcome`, given the layer's `verdict`.
    fn decide(&self, request: &Req, outcome: Result<&T, &E>, verdict: Verdict) -> bool;
}

impl<Req, T, E> RequestHook<Req, T, E> for DefaultRule {
    #[inline]
    fn decide(&self, _: &Req, _: Result<&T, &E>, verdict: Verdict) -> bool {
        verdict.retry()
    }
}

impl<Req, T, E, F: Fn(&Req, Result<&T, &E>, Verdict) -> bool> RequestHook<Req, T, E> for F {
    #[inline]
    fn decide(&self, request: &Req, outcome: Result<&T, &E>, verdict: Verdict) -> bool {
        self(request, outcome, verdict)
    }
}

impl<B, B2, E, F> RetryRequest<Request<B>, Response<B2>, E> for HttpRequests<F>
where
    F: RequestHook<Request<B>, Response<B2>, E>,
{
    fn retry_request(
        &self,
        request: &Request<B>,
        outcome: Result<&Response<B2>, &E>,
        retryable: bool,
    ) -> bool {
        if let Ok(response) = outcome {
            #[cfg(feature = "spans")]
            crate::clients::http_spans::response_came(response.status());
            // The crate knows a response's class (a 429 is throttling): a `retry_if_ok` of
            // the user's that noted none gets it, as after `transient`.
            crate::classify::effect::note_class_unless_noted(response, || {
                crate::error_class(&response.status())
            });
        }
        let verdict = self.verdict(request, outcome, retryable);
        let decision = self.rule.decide(request, outcome, verdict);
        if verdict.retryable && !verdict.safe && !decision {
            // A transient failure kept from a retry by the safety rule: an unknown outcome
            // of a request that is not safe to repeat.
            crate::classify::effect::note_refused();
        }
        decision
    }

    fn judges_safety(&self) -> bool {
        true
    }

    /// A copy whose `ReplayBody` clone another copy left behind past the cap.
    fn left_behind(&self, request: &Request<B>, error: &E) -> bool {
        Committed::in_extensions(request.extensions())
            && as_error(error).is_some_and(crate::classify::http::left_behind_by_the_cap)
    }

    /// A `ReplayBody` past its cap: the call is committed to the attempt that read it (the
    /// copies in flight of a hedged call still answer; nothing more starts).
    fn retry_refused(&self, request: &Request<B>) -> Option<crate::GiveUpReason> {
        Committed::in_extensions(request.extensions()).then_some(crate::GiveUpReason::NotRetryable)
    }

    fn idempotent(&self, request: &Request<B>) -> Option<bool> {
        Some(self.safety.idempotent(request.method(), request.headers()))
    }

    /// No hedge of a request that may not be sent twice (no outcome yet: the first copy
    /// may be acting on it), nor of one whose `ReplayBody` is past its cap.
    fn hedge_allowed(&self, request: &Request<B>) -> bool {
        !Committed::in_extensions(request.extensions())
            && safe_to_resend(request.method(), request.headers(), self.safety, false)
    }

    fn finish(&self, outcome: &mut Result<Response<B2>, E>, attempts: u32) {
        if let Ok(response) = outcome {
            response.extensions_mut().insert(Attempts(attempts));
        }
    }
}

/// A layer's replay slot that the HTTP settings can be added to, in any order: the default
/// [`Cloned`] (it becomes [`HttpRequests`]) or [`HttpRequests`] itself.
///
/// ```
/// use reattempt::tower::{Cloned, HttpReplay, HttpRequests, Replay};
///
/// let requests: HttpRequests = Cloned.into_http();
/// let request = http::Request::get("http://api.test/").body(String::new()).unwrap();
/// assert_eq!(requests.replay(&request).uri(), "http://api.test/");
/// ```
pub trait HttpReplay {
    /// The request-aware hook it carries ([`DefaultRule`] for none).
    type Rule;
    /// The HTTP request copies, with the settings made so far.
    fn into_http(self) -> HttpRequests<Self::Rule>;
}

impl HttpReplay for Cloned {
    type Rule = DefaultRule;
    fn into_http(self) -> HttpRequests {
        HttpRequests::default()
    }
}

impl<F> HttpReplay for HttpRequests<F> {
    type Rule = F;
    fn into_http(self) -> Self {
        self
    }
}

impl<F> SaysIdempotent for HttpRequests<F> {
    fn said_idempotent(mut self, idempotent: bool) -> Self {
        self.safety.said = Some(idempotent);
        self
    }
}

/// Retries a response whose status is transient (408, 429, 500, 502, 503, 504; see
/// [`Transient` for `StatusCode`](crate::Transient)).
#[derive(Debug, Clone, Copy, Default)]
pub struct TransientStatus;

impl<B> OkHook<Response<B>> for TransientStatus {
    #[inline]
    fn call(&mut self, response: &Response<B>) -> Option<bool> {
        Some(crate::http::retried_response(
            response.status(),
            response.headers(),
        ))
    }

    /// A 429 response is throttling (`StatusCode`'s [`Transient::class`](crate::Transient::class)).
    #[inline]
    fn class(&mut self, response: &Response<B>) -> Option<crate::ErrorClass> {
        Some(response.status().class())
    }

    /// A transient status not retried (`x-should-retry: false`, the safety rule) is still
    /// the dependency's failure.
    #[inline]
    fn failed(&mut self, response: &Response<B>) -> bool {
        response.status().is_transient()
    }
}

/// Reads a retried response's hint: `Retry-After` (both forms), the millisecond fields
/// (`retry-after-ms`, `x-ms-retry-after-ms`, `x-amz-retry-after`) and the rate-limit fields,
/// in the order [`server_hint`](crate::http::server_hint) gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct RetryAfterHeader;

impl<B> ErrorHook<Response<B>, Option<Duration>> for RetryAfterHeader {
    fn call(&mut self, response: &Response<B>) -> Option<Option<Duration>> {
        Some(crate::http::server_hint(response.headers()).delay)
    }
}

impl<B> DelayHook<Response<B>> for RetryAfterHeader {
    fn hint(&mut self, response: &Response<B>) -> Option<Duration> {
        crate::http::server_hint(response.headers()).delay
    }
    fn choose(&mut self, _: &Response<B>, _: u32, _: Duration) -> Option<Duration> {
        None
    }
}

/// `delay_for_ok` after `.http()` keeps the server's hint.
impl DelaySlot for RetryAfterHeader {
    type Hint = RetryAfterHeader;
    type Choose = Unset;
    fn into_parts(self) -> (RetryAfterHeader, Unset) {
        (self, Unset)
    }
}

/// The hooks [`RetryLayer::http`] sets: every error retried, transient statuses retried,
/// their `Retry-After` honoured (the safety rule is [`HttpRequests`]'s, on top of them).
pub type HttpHooks = HttpHooksOf<Unset, Unset, Unset, Unset>;

/// The hooks [`RetryLayer::http`] sets beside the error settings given before it (`retry_if`
/// `RI`, `retry_after` `RA`, `on_retry` `OR`, `timeout_if` or `error_class` `TI`).
pub type HttpHooksOf<RI, RA, OR, TI> = Classify<RI, TransientStatus, RA, RetryAfterHeader, OR, TI>;

impl<RI, RO, RA, RAO, OR, TI, C, R: HttpReplay + Clone, B: Clone, G: Clone, Q: Clone, L: Clone>
    RetryLayer<Classify<RI, RO, RA, RAO, OR, TI>, C, R, B, G, Q, L>
where
    R::Rule: Clone,
{
    /// The ready HTTP classification, for a service of `http::Request<Body>` (hyper's,
    /// hyper-util's, tonic's clients): each attempt sends a copy of the request (its body
    /// must be `Clone`: `Full<Bytes>`, `String`, or a streaming body made replayable by
    /// [`ReplayBodyLayer`], see below; a bare streaming body does not compile); every
    /// error is retried (a connection reset, a response lost), within the safety rule below;
    /// a response with a transient
    /// status (408, 429, 500, 502, 503, 504) is retried, after at least the delay its
    /// `Retry-After` asks for (both forms), and when no retry is left, returned as it is.
    /// With [`outer_attempts_header`](RetryLayer::outer_attempts_header), each attempt that
    /// has attempts left after it (or whose call is nested in one that has) carries
    /// [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT), for `one_layer` across
    /// services ([`OuterRetryLayer`](super::OuterRetryLayer)).
    /// The other settings still apply (`.retry_if` narrows the errors retried).
    ///
    /// HTTP's safety rule (RFC 9110 §9.2.2): a request whose method is not
    /// [`idempotent`](crate::http::idempotent) (`POST`, `PATCH`) is retried only when
    /// sending it again cannot do its side effect twice:
    /// - it carries an `Idempotency-Key` (its own, or the call's with
    ///   [`idempotency_key_header`](RetryLayer::idempotency_key_header));
    /// - the attempt provably never reached the server: a refused connection, found in the
    ///   error's sources ([`never_sent`](crate::http::never_sent)) when the service's error
    ///   is a `tower::BoxError`, an `io::Error` or a `reqwest::Error` (the layer cannot look
    ///   inside other types);
    /// - the server answered 408 or 429: it says it did not act on the request. A 500, 502,
    ///   503 or 504 may come after it did (a gateway's, or a service mesh's 503, after its
    ///   upstream did),
    ///   so they are returned, as a lost response (a reset after the request was read, an
    ///   attempt the policy's `timeout` cut) is;
    /// - or [`retry_unsafe_methods(true)`](RetryLayer::retry_unsafe_methods) says so.
    ///
    /// [`retry_request`](RetryLayer::retry_request) decides per request instead. The
    /// settings of this paragraph and `.http()` may come in any order. The rule governs
    /// hedges too: with the policy's `hedge_after`, no copy of a request that may not be
    /// sent twice starts. A transient failure the rule keeps from a retry still counts as
    /// the dependency's failure for the circuit breaker.
    ///
    /// The final response carries the number of attempts made for it in its extensions
    /// ([`Attempts`](crate::http::Attempts)).
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
    ///     .http()
    ///     .idempotency_key_header()
    ///     .name("payments");
    /// # let _ = layer;
    /// ```
    ///
    /// **Streaming bodies.** A body that is not `Clone` (a stream, an upload, hyper's
    /// `Incoming` being proxied) is made replayable by [`ReplayBodyLayer`] in front of this
    /// layer: it takes a plain `Request<B>`, wraps its body in a
    /// [`ReplayBody`](crate::http::ReplayBody) that records what the first attempt sends
    /// (up to a cap, 64 KiB by default) and replays it to the next ones, and hands this
    /// layer a `Request<ReplayBody<B>>` (so the inner service, a hyper-util `Client`, is
    /// built for that body type). Past the cap the call is committed to the attempt that
    /// sends the body: it is sent once, never buffered beyond the cap, and neither retried
    /// nor hedged (its outcome is returned as it is). A request made with
    /// [`ReplayBody::request`](crate::http::ReplayBody::request) works the same without the
    /// layer.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::sync::{Arc, Mutex};
    ///     use bytes::Bytes;
    ///     use http::{Request, Response, StatusCode};
    ///     use http_body_util::{BodyExt, StreamBody};
    ///     use http_body::Frame;
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::http::ReplayBody;
    ///     use reattempt::tower::{ReplayBodyLayer, RetryLayer};
    ///     use tower::Layer;
    ///     use tower::Service;
    ///
    ///     /// A body streamed in chunks (not `Clone`).
    ///     type Upload = StreamBody<Chunks>;
    /// # struct Chunks(u32, usize);
    /// # fn chunks(n: u32, size: usize) -> Chunks { Chunks(n, size) }
    /// # impl futures_core::Stream for Chunks {
    /// #     type Item = Result<Frame<Bytes>, std::convert::Infallible>;
    /// #     fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>)
    /// #         -> std::task::Poll<Option<Self::Item>> {
    /// #         if self.0 == 0 { return std::task::Poll::Ready(None) }
    /// #         self.0 -= 1;
    /// #         let chunk = Bytes::from(vec![u8::try_from(self.0).unwrap(); self.1]);
    /// #         std::task::Poll::Ready(Some(Ok(Frame::data(chunk))))
    /// #     }
    /// # }
    ///
    ///     // A server that reads each request's body and answers 503, then 201.
    ///     #[derive(Clone, Default)]
    ///     struct Server(Arc<Mutex<Vec<Bytes>>>);
    ///     impl Service<Request<ReplayBody<Upload>>> for Server {
    ///         type Response = Response<String>;
    ///         type Error = Box<dyn std::error::Error + Send + Sync>;
    ///         type Future = std::pin::Pin<Box<dyn std::future::Future<
    ///             Output = Result<Response<String>, Self::Error>> + Send>>;
    ///         fn poll_ready(&mut self, _: &mut std::task::Context<'_>)
    ///             -> std::task::Poll<Result<(), Self::Error>> {
    ///             std::task::Poll::Ready(Ok(()))
    ///         }
    ///         fn call(&mut self, req: Request<ReplayBody<Upload>>) -> Self::Future {
    ///             let seen = Arc::clone(&self.0);
    ///             Box::pin(async move {
    ///                 let body = req.into_body().collect().await?.to_bytes();
    ///                 let mut seen = seen.lock().unwrap();
    ///                 seen.push(body);
    ///                 let status = if seen.len() == 1 { 503 } else { 201 };
    ///                 Ok(Response::builder().status(status).body(String::new())?)
    ///             })
    ///         }
    ///     }
    ///
    ///     let server = Server::default();
    ///     let retry = RetryLayer::new(RetryPolicy::builder().build().unwrap()).http();
    ///     let mut svc = ReplayBodyLayer::new(1 << 20).layer(retry.layer(server.clone()));
    ///
    ///     let upload = StreamBody::new(chunks(4, 1000));
    ///     let response = svc.call(Request::put("http://api.test/blob").body(upload).unwrap());
    ///     assert_eq!(response.await.unwrap().status(), StatusCode::CREATED);
    ///     let seen = server.0.lock().unwrap();
    ///     assert_eq!(seen.len(), 2);
    ///     assert_eq!(seen[0].len(), 4000);
    ///     assert_eq!(seen[0], seen[1], "the same bytes on both attempts");
    /// }
    /// ```
    ///
    /// `.http()` may come after other classification settings (`retry_if`, `retry_after`,
    /// `on_retry`, `timeout_if`, `error_class`), which it keeps; it sets the responses'
    /// (`retry_if_ok`, `retry_after_ok`), so settings of those come after it.
    ///
    /// [`ReplayBodyLayer`]: super::replay_body_layer::ReplayBodyLayer
    #[allow(
        clippy::type_complexity,
        reason = "the layer's settings, one type parameter each"
    )]
    pub fn http(
        self,
    ) -> RetryLayer<HttpHooksOf<RI, RA, OR, TI>, C, HttpRequests<R::Rule>, B, G, Q, L> {
        self.map_http(|requests| requests).map_hooks(|h| Classify {
            retry_if: h.retry_if,
            retry_if_ok: TransientStatus,
            retry_after: h.retry_after,
            retry_after_ok: RetryAfterHeader,
            on_retry: h.on_retry,
            timeout_if: h.timeout_if,
        })
    }
}

impl<H, C, R: HttpReplay + Clone, B: Clone, G: Clone, Q: Clone, L: Clone>
    RetryLayer<H, C, R, B, G, Q, L>
where
    R::Rule: Clone,
{
    /// Changes the HTTP request copies' settings (`f` gets them as they are so far).
    fn map_http<F2>(
        self,
        f: impl FnOnce(HttpRequests<R::Rule>) -> HttpRequests<F2>,
    ) -> RetryLayer<H, C, HttpRequests<F2>, B, G, Q, L> {
        self.map_settings(|s| Settings {
            // The policy's word on repeating (`RetryPolicyBuilder::idempotent`) is over the
            // method rule, as the layer's own (`idempotent`) is.
            replay: f(match s.policy.idempotent() {
                Some(said) => s.replay.into_http().said_idempotent(said),
                None => s.replay.into_http(),
            }),
            policy: s.policy,
            name: s.name,
            breaker: s.breaker,
            budget: s.budget,
            throttle: s.throttle,
            bulkhead: s.bulkhead,
        })
    }

    /// Sets an `Idempotency-Key` header, the call's key
    /// ([`RetryContext::idempotency_key`](crate::RetryContext::idempotency_key)), on every
    /// attempt's request, unless the request has one: the server can tell a retry from a
    /// new call, and perform it once, so a non-idempotent request (a `POST`) becomes safe to
    /// retry after a lost response. Before or after [`http`](RetryLayer::http).
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let layer = RetryLayer::new(policy).idempotency_key_header().http();
    /// # let _ = layer;
    /// ```
    #[must_use]
    pub fn idempotency_key_header(self) -> RetryLayer<H, C, HttpRequests<R::Rule>, B, G, Q, L> {
        self.map_http(|r| HttpRequests {
            safety: SafetyRule {
                idempotency_key: true,
                ..r.safety
            },
            ..r
        })
    }

    /// With `true`, retries a request whatever its method, as if every method were
    /// idempotent (Polly's `DisableForUnsafeHttpMethods` is the opposite switch): for a
    /// server that deduplicates by other means (a key in the body). Default `false`: see
    /// [`http`](RetryLayer::http) for the safety rule.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let layer = RetryLayer::new(policy).http().retry_unsafe_methods(true);
    /// # let _ = layer;
    /// ```
    #[must_use]
    pub fn retry_unsafe_methods(
        self,
        retry: bool,
    ) -> RetryLayer<H, C, HttpRequests<R::Rule>, B, G, Q, L> {
        self.map_http(|r| HttpRequests {
            safety: SafetyRule {
                unsafe_methods: retry,
                ..r.safety
            },
            ..r
        })
    }

    /// Decides, for each attempt's outcome, whether the request is sent again, seeing the
    /// request (method, URI, headers, extensions), the outcome and what the layer would
    /// decide ([`Verdict`]: whether the classification retries the outcome, whether the
    /// request is safe to send again; the default decision is [`Verdict::retry`]), as
    /// tower's `Policy::retry` sees the request and the result. Called for every outcome,
    /// successes included; `true` retries it (while attempts, `max_elapsed` and the budget
    /// allow), so return `true` only for outcomes worth another attempt. Its argument types
    /// are the service's: write them on the closure.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use std::sync::Arc;
    ///     use std::sync::atomic::{AtomicU32, Ordering};
    ///     use http::{Request, Response, StatusCode};
    ///     use reattempt::RetryPolicy;
    ///     use reattempt::http::Verdict;
    ///     use reattempt::tower::RetryLayer;
    ///     use tower::Layer;
    ///     use tower::Service;
    ///
    ///     // A service that answers 500 to every request it counts.
    ///     #[derive(Clone)]
    ///     struct Failing(Arc<AtomicU32>);
    ///     impl Service<Request<String>> for Failing {
    ///         type Response = Response<String>;
    ///         type Error = io::Error;
    ///         type Future = std::future::Ready<io::Result<Response<String>>>;
    ///         fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
    ///             std::task::Poll::Ready(Ok(()))
    ///         }
    ///         fn call(&mut self, _: Request<String>) -> Self::Future {
    ///             self.0.fetch_add(1, Ordering::SeqCst);
    ///             let mut response = Response::new(String::new());
    ///             *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    ///             std::future::ready(Ok(response))
    ///         }
    ///     }
    ///
    ///     // `POST /search` has no side effect: retry it as a `GET`.
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let sent = Arc::new(AtomicU32::new(0));
    ///     let mut svc = RetryLayer::new(policy)
    ///         .http()
    ///         .retry_request(
    ///             |req: &Request<String>, _: Result<&Response<String>, &io::Error>, v: Verdict| {
    ///                 v.retryable && (v.safe || req.uri().path() == "/search")
    ///             },
    ///         )
    ///         .layer(Failing(Arc::clone(&sent)));
    ///
    ///     let search = Request::post("http://api.test/search").body(String::new()).unwrap();
    ///     assert_eq!(svc.call(search).await.unwrap().status(), 500);
    ///     assert_eq!(sent.swap(0, Ordering::SeqCst), 3, "retried");
    ///
    ///     let order = Request::post("http://api.test/orders").body(String::new()).unwrap();
    ///     assert_eq!(svc.call(order).await.unwrap().status(), 500);
    ///     assert_eq!(sent.load(Ordering::SeqCst), 1, "a POST's 500 is not retried");
    /// }
    /// ```
    pub fn retry_request<F2: Clone>(
        self,
        hook: F2,
    ) -> RetryLayer<H, C, HttpRequests<F2>, B, G, Q, L> {
        self.map_http(|r| HttpRequests {
            safety: r.safety,
            outer_attempts: r.outer_attempts,
            rule: hook,
        })
    }

    /// Sets [`OUTER_ATTEMPTS_LEFT`](crate::http::OUTER_ATTEMPTS_LEFT) on an attempt's
    /// request while the call (or a call around it) has attempts left after it, to how
    /// many: a service behind [`OuterRetryLayer`](super::OuterRetryLayer) whose own calls
    /// have `one_layer` then makes one attempt and leaves the retrying to this call. Off by
    /// default, like the idempotency key: it tells the server about the caller's retries.
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use reattempt::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(RetryPolicy::builder().build().unwrap())
    ///     .http()
    ///     .outer_attempts_header();
    /// # let _ = layer;
    /// ```
    #[must_use]
    pub fn outer_attempts_header(self) -> RetryLayer<H, C, HttpRequests<R::Rule>, B, G, Q, L> {
        self.map_http(|r| HttpRequests {
            outer_attempts: true,
            ..r
        })
    }
}
