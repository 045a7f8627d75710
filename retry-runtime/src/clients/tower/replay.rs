//! How the layer copies a request for each attempt ([`Replay`]) and decides, seeing the
//! request, whether to send it again ([`RetryRequest`]).

/// How a request is copied for each attempt.
///
/// [`Cloned`] (the default) copies a `Clone` request; with the feature `http`,
/// [`HttpRequests`] copies an `http::Request<B>` whose body `B` is `Clone` (a `String`, `Bytes`,
/// `http_body_util::Full<Bytes>`), and can set an `Idempotency-Key` header. A request that cannot
/// be copied (a streaming body) does not compile: a retrying layer never sends it once silently.
///
/// [`HttpRequests`]: super::http::HttpRequests
#[diagnostic::on_unimplemented(
    message = "the retry layer cannot copy a `{Req}` for each attempt",
    label = "no copy of `{Req}` per attempt",
    note = "a request must be `Clone` (or, with `.http()`, an `http::Request<B>` with a `Clone` body such as `Full<Bytes>`): a streaming body cannot be sent twice"
)]
pub trait Replay<Req> {
    /// The request the next attempt sends. Called inside the call's
    /// [`context()`](crate::context()), so it can read the attempt number and the call's key.
    fn replay(&self, request: &Req) -> Req;
}

/// A layer's replay slot told whether its requests are safe to repeat
/// ([`RetryLayer::idempotent`]): [`Cloned`] has nothing to change (the policy carries it); with
/// the feature `http`, [`HttpRequests`] puts it over HTTP's method rule.
///
/// [`RetryLayer::idempotent`]: super::layer::RetryLayer::idempotent
/// [`HttpRequests`]: super::http::HttpRequests
pub trait SaysIdempotent {
    /// The slot, told.
    #[must_use]
    fn said_idempotent(self, idempotent: bool) -> Self;
}

impl SaysIdempotent for Cloned {
    fn said_idempotent(self, idempotent: bool) -> Self {
        let _ = idempotent;
        self
    }
}

/// Copies a `Clone` request for each attempt (the default [`Replay`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Cloned;

impl<Req: Clone> Replay<Req> for Cloned {
    #[inline]
    fn replay(&self, request: &Req) -> Req {
        request.clone()
    }
}

/// Whether a call sends its request again after an attempt's outcome, seeing the request: the
/// layer's request-aware decision, made by its [`Replay`] slot ([`Cloned`]: the classification's
/// answer as it is; with the feature `http`, [`HttpRequests`]: HTTP's safety rule and the hook of
/// [`RetryLayer::retry_request`]). Like tower's `Policy::retry`, it sees the request and the
/// outcome; the classification (`retry_if`, `retry_if_ok`) has answered first (`retryable`).
///
/// ```
/// use reattempt::tower::{Cloned, RetryRequest};
///
/// let outcome: Result<&u32, &std::io::Error> = Ok(&503);
/// // A plain layer does what its classification says.
/// assert!(Cloned.retry_request(&"request", outcome, true));
/// assert!(!Cloned.retry_request(&"request", outcome, false));
/// ```
///
/// [`RetryLayer::retry_request`]: super::layer::RetryLayer::retry_request
/// [`HttpRequests`]: super::http::HttpRequests
pub trait RetryRequest<Req, T, E> {
    /// Whether to retry after `outcome`, which the classification calls `retryable` or not.
    fn retry_request(&self, request: &Req, outcome: Result<&T, &E>, retryable: bool) -> bool;

    /// Whether the slot judges for itself whether a request is safe to repeat (HTTP's safety
    /// rule): the classification asked before it then says only whether an outcome is transient
    /// (see [`Hooks::idempotent`](crate::Hooks::idempotent)). Default: no.
    #[inline]
    fn judges_safety(&self) -> bool {
        false
    }

    /// Whether `request` says it is safe to repeat after an attempt whose outcome is unknown
    /// (see [`Hooks::idempotent`](crate::Hooks::idempotent)). Default: it does not say (`None`);
    /// with the feature `http`, [`HttpRequests`] answers by the layer's
    /// [`idempotent`][RetryLayer::idempotent] if given, else by RFC 9110's method rule and the
    /// request's `Idempotency-Key`.
    ///
    /// [`HttpRequests`]: super::http::HttpRequests
    /// [RetryLayer::idempotent]: super::layer::RetryLayer::idempotent
    #[inline]
    fn idempotent(&self, request: &Req) -> Option<bool> {
        let _ = request;
        None
    }

    /// Whether a hedge (a copy sent while an attempt is in flight) of `request` may start.
    /// Default: yes; with the feature `http`, [`HttpRequests`] says no for a request that may
    /// not be sent twice (HTTP's safety rule).
    ///
    /// [`HttpRequests`]: super::http::HttpRequests
    #[inline]
    fn hedge_allowed(&self, request: &Req) -> bool {
        let _ = request;
        true
    }

    /// Whether the request itself rules out any further attempt, whatever the outcome (a body
    /// past its replay cap: the call is committed to the copy that sent it). `Some(reason)`:
    /// nothing more starts, and the copies in flight still answer (see
    /// [`Hooks::retry_refused`](crate::Hooks::retry_refused)). Default: `None`.
    #[inline]
    fn retry_refused(&self, request: &Req) -> Option<crate::GiveUpReason> {
        let _ = request;
        None
    }

    /// Whether `error` is the error of a copy of `request` left behind by the replay cap
    /// (another copy took the body past it): the client's own doing, not the dependency's
    /// outcome. Such an error is never shown to the classification: the call's copy holding
    /// the body answers for it (it is retried, and so refused by the cap), and it counts for
    /// neither the breaker nor the throttle. Default: no; with the feature `http`,
    /// [`HttpRequests`] says yes for a [`BodyNotReplayable`](crate::http::BodyNotReplayable)
    /// among the error's sources (an error seen through `tower::BoxError`, `std::io::Error`
    /// or `reqwest::Error`).
    ///
    /// ```
    /// use reattempt::tower::{Cloned, RetryRequest};
    ///
    /// let error = std::io::Error::other("reset");
    /// assert!(!RetryRequest::<_, (), _>::left_behind(&Cloned, &"request", &error));
    /// ```
    ///
    /// [`HttpRequests`]: super::http::HttpRequests
    #[inline]
    fn left_behind(&self, request: &Req, error: &E) -> bool {
        let _ = (request, error);
        false
    }

    /// Called once with the call's final outcome and the number of attempts made (with the
    /// feature `http`, [`HttpRequests`] records it in a response's extensions). Default:
    /// nothing.
    ///
    /// [`HttpRequests`]: super::http::HttpRequests
    #[inline]
    fn finish(&self, outcome: &mut Result<T, E>, attempts: u32) {
        let _ = (outcome, attempts);
    }
}

impl<Req, T, E> RetryRequest<Req, T, E> for Cloned {
    #[inline]
    fn retry_request(&self, _: &Req, _: Result<&T, &E>, retryable: bool) -> bool {
        retryable
    }
}
