//! What the gRPC layer decides after each attempt, as gRFC A6 says: which statuses are retried
//! (the policy's `retryableStatusCodes`, a hedging policy's `nonFatalStatusCodes`), what a
//! server's pushback means, the backoff before the next attempt, what the throttle is told, and
//! what a request past its replay cap may still do (nothing but the attempt it is on).

use std::time::Duration;

use http::Response;
use tonic::Status;
use tonic::body::Body;
use tonic::metadata::MetadataValue;

use super::attempt::AttemptRequest;
use crate::classify::tonic::{Codes, RetryThrottle};
use crate::clients::tower::{Replay, RetryRequest};
use crate::engine::hooks::Hooks;
use crate::engine::hooks_forward::{ForwardHooks, forward_hooks};
use crate::schedule::jitter::SampleJitter;
use crate::schedule::preset::A6_JITTER;
use crate::schedule::rng::with_jitter_rng;
use crate::{ErrorClass, GiveUpReason};

/// gRFC A6's pushback trailer (`Transient for Status` reads it with [`pushback`] too).
pub(crate) const PUSHBACK: &str = "grpc-retry-pushback-ms";

/// What a server's `grpc-retry-pushback-ms` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushback {
    /// No pushback: the policy's backoff decides.
    None,
    /// Retry after exactly this delay (then the backoff starts again from its base).
    After(Duration),
    /// Do not retry: a negative or malformed value (A6), or more than one value (grpc-go).
    Stop,
}

/// Reads a status's pushback. A6: "an ASCII encoded signed 32-bit integer with no unnecessary
/// leading zeros"; a negative or unparseable value asks the client not to retry. As grpc-go
/// (`strconv.Atoi`) and grpc-java (`Integer.valueOf`) read it, a leading `+` or zero is
/// accepted (`"0300"` is 300 ms, `"-0"` is 0). Two values or more are malformed, as grpc-go
/// reads them ("Server retry pushback specified multiple values; not retrying").
pub(crate) fn pushback(status: &Status) -> Pushback {
    let mut values = status.metadata().get_all(PUSHBACK).iter();
    let Some(value) = values.next() else {
        return Pushback::None;
    };
    if values.next().is_some() {
        return Pushback::Stop;
    }
    let Ok(text) = value.to_str() else {
        return Pushback::Stop;
    };
    match text.parse::<i32>() {
        Ok(ms) if ms >= 0 => Pushback::After(Duration::from_millis(ms.unsigned_abs().into())),
        _ => Pushback::Stop,
    }
}

/// The metadata key that tells the server how many attempts came before this one.
pub(crate) static PREVIOUS_ATTEMPTS: http::HeaderName =
    http::HeaderName::from_static("grpc-previous-rpc-attempts");

/// A6's backoff before the `n`-th retry since the last pushback (1-based), before jitter:
/// `min(initial_backoff × multiplier^(n−1), max_backoff)`. Saturates; never panics.
pub(crate) fn backoff_base(initial: Duration, multiplier: f64, max: Duration, n: u32) -> Duration {
    let exponent = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
    let scaled = initial.as_secs_f64() * multiplier.powi(exponent);
    if !scaled.is_finite() || scaled >= max.as_secs_f64() {
        return max;
    }
    Duration::try_from_secs_f64(scaled).map_or(max, |d| d.min(max))
}

/// A6's jitter: the base delay times `random(0.8, 1.2)` (as [`Preset::Grpc`](crate::Preset::Grpc)'s).
pub(crate) fn jittered(base: Duration) -> Duration {
    with_jitter_rng(|rng| A6_JITTER.apply(base, base, base, base, rng))
}

/// How the method's calls are retried.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    /// No policy: one attempt (and A6's transparent retry below it).
    Once,
    /// A `retryPolicy`.
    Retry {
        codes: Codes,
        initial: Duration,
        multiplier: f64,
        max: Duration,
    },
    /// A `hedgingPolicy`: copies `hedgingDelay` apart; a non-fatal status sends the next at once.
    Hedge { codes: Codes },
}

impl Mode {
    fn codes(self) -> Codes {
        match self {
            Mode::Once => Codes::default(),
            Mode::Retry { codes, .. } | Mode::Hedge { codes } => codes,
        }
    }
}

/// The layer's hooks, one copy per call (the tower layer clones them for each): the call's A6
/// state is the backoff's count since the last pushback and the last failure's pushback.
#[derive(Clone, Debug)]
pub(crate) struct GrpcHooks {
    pub(crate) mode: Mode,
    pub(crate) throttle: Option<RetryThrottle>,
    /// Retries since the last pushback (A6's `n`, before this one).
    since_pushback: u32,
    /// The last failure's pushback.
    last_pushback: Pushback,
    /// A pushback said not to retry: no further attempt, hedge or retry.
    stopped: bool,
    /// The throttle refused a retry after the last failure (A6: at half or below).
    throttled: bool,
}

impl GrpcHooks {
    pub(crate) fn new(mode: Mode, throttle: Option<RetryThrottle>) -> Self {
        GrpcHooks {
            mode,
            throttle,
            since_pushback: 0,
            last_pushback: Pushback::None,
            stopped: false,
            throttled: false,
        }
    }
}

impl Hooks<Response<Body>, Status> for GrpcHooks {
    /// Whether the status is one of the policy's codes: a failure the call would retry (or, in
    /// a hedged call, one the other copies may still answer for). Whether a retry may follow
    /// is [`retry_refused`](Hooks::retry_refused)'s say: a pushback asking for none, or the
    /// throttle at half, stops further attempts without cancelling the copies in flight (A6:
    /// "no further hedged requests").
    fn retry_if(&mut self, status: &Status) -> bool {
        if super::attempt::left_behind_by_the_cap(status) {
            // A copy whose body another copy took past the cap: the client's own doing, not the
            // server's failure (nothing for the throttle); the copy that sent the body answers.
            return true;
        }
        let retryable = self.mode.codes().contains(status.code());
        let pushback = pushback(status);
        if !retryable && pushback != Pushback::Stop {
            // Not a failure of the server's (A6: INVALID_ARGUMENT is not one for the throttle).
            self.last_pushback = Pushback::None;
            return false;
        }
        // A6: a retryable or non-fatal status, or a pushback saying not to retry (whatever the
        // status, as grpc-go and grpc-java count it), is a failure for the throttle, which then
        // says whether a retry (or hedge) may follow.
        self.last_pushback = pushback;
        self.throttled = !self
            .throttle
            .as_ref()
            .is_none_or(RetryThrottle::record_failure);
        if pushback == Pushback::Stop {
            self.stopped = true;
        }
        retryable
    }

    /// A copy whose body another copy took past the cap is not the server's failure.
    fn counts_as_failure(&mut self, status: &Status) -> bool {
        !super::attempt::left_behind_by_the_cap(status)
    }

    fn retry_refused(&mut self) -> Option<GiveUpReason> {
        if self.stopped {
            // The server asked for no retry at all: longer than the call may wait.
            Some(GiveUpReason::RetryAfterTooLong)
        } else if self.throttled {
            Some(GiveUpReason::BudgetExhausted)
        } else {
            None
        }
    }

    fn retry_if_ok(&mut self, _: &Response<Body>) -> bool {
        // A response with headers commits the call (A6); a Trailers-Only OK is a success too.
        if let Some(throttle) = &self.throttle {
            throttle.record_success();
        }
        false
    }

    fn delay_for(&mut self, _: &Status, _attempt: u32, _computed: Duration) -> Option<Duration> {
        match (self.mode, self.last_pushback) {
            // "Retry after exactly that delay. For subsequent retries, the delay period will be
            // reset to the initialBackoff setting" (A6).
            (_, Pushback::After(delay)) => {
                self.since_pushback = 0;
                Some(delay)
            }
            // "If a non-fatal status code is received from a hedged request, then the next
            // hedged request in line is sent immediately" (A6).
            (Mode::Hedge { .. }, _) => Some(Duration::ZERO),
            (
                Mode::Retry {
                    initial,
                    multiplier,
                    max,
                    ..
                },
                _,
            ) => {
                self.since_pushback = self.since_pushback.saturating_add(1);
                Some(jittered(backoff_base(
                    initial,
                    multiplier,
                    max,
                    self.since_pushback,
                )))
            }
            (Mode::Once, _) => None,
        }
    }

    fn class(&mut self, status: &Status) -> ErrorClass {
        crate::classify::error_class(status)
    }

    fn error_failed(&mut self, status: &Status) -> bool {
        // Asked only for a status not retried: not one of the policy's codes, so the caller's
        // (a 400), not the server's failure, for the breaker.
        let _ = status;
        false
    }

    /// A6: the service config's `retryableStatusCodes` and `hedgingPolicy` are the service
    /// owner's judgement of what is safe to send again, obeyed as written.
    fn idempotent(&mut self) -> Option<bool> {
        Some(true)
    }

    fn hedge_allowed(&mut self) -> bool {
        // A6: hedges start only while the throttle is above half, and never after a pushback
        // that said not to retry.
        !self.stopped
            && self
                .throttle
                .as_ref()
                .is_none_or(RetryThrottle::allows_retry)
    }
}

/// The classification of a layer made with [`GrpcRetryLayer::from_policy`]: the statuses
/// [`transient`](crate::transient) retries (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, tonic's own
/// deadline, transport failures; not a status whose pushback says stop), a server's pushback as
/// the next delay (within the policy's `max_delay`), and the class of each status
/// ([`error_class`](crate::error_class): `RESOURCE_EXHAUSTED` is throttling).
///
/// Give your own with [`GrpcRetryLayer::hooks`], starting from this one's answers if you like:
///
/// ```
/// use tonic::{Code, Status};
/// use reattempt::Hooks;
/// use reattempt::tonic::TransientStatuses;
///
/// let mut hooks = TransientStatuses;
/// let hooks: &mut dyn Hooks<http::Response<tonic::body::Body>, Status> = &mut hooks;
/// assert!(hooks.retry_if(&Status::unavailable("down")));
/// assert!(!hooks.retry_if(&Status::invalid_argument("bad")));
/// ```
///
/// [`GrpcRetryLayer::from_policy`]: super::GrpcRetryLayer::from_policy
/// [`GrpcRetryLayer::hooks`]: super::GrpcRetryLayer::hooks
#[derive(Clone, Copy, Debug, Default)]
pub struct TransientStatuses;

impl Hooks<Response<Body>, Status> for TransientStatuses {
    fn retry_if(&mut self, status: &Status) -> bool {
        super::attempt::left_behind_by_the_cap(status) || crate::transient(status)
    }

    fn counts_as_failure(&mut self, status: &Status) -> bool {
        !super::attempt::left_behind_by_the_cap(status)
    }

    fn delay_for(&mut self, status: &Status, _: u32, _: Duration) -> Option<Duration> {
        match pushback(status) {
            Pushback::After(delay) => Some(delay),
            Pushback::None | Pushback::Stop => None,
        }
    }

    fn is_timeout(&mut self, status: &Status) -> bool {
        crate::is_timeout(status)
    }

    fn class(&mut self, status: &Status) -> ErrorClass {
        crate::error_class(status)
    }
}

/// A layer's hooks behind one type, whichever they are (gRPC's rules or a user's): cloned per
/// call by the tower layer.
pub(crate) struct BoxedHooks(Box<dyn ObjectHooks>);

impl BoxedHooks {
    pub(crate) fn new<H>(hooks: H) -> Self
    where
        H: Hooks<Response<Body>, Status> + Clone + Send + Sync + 'static,
    {
        BoxedHooks(Box::new(hooks))
    }
}

impl std::fmt::Debug for BoxedHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoxedHooks")
    }
}

/// [`Hooks`] that can be cloned behind a `Box`.
pub(crate) trait ObjectHooks: Hooks<Response<Body>, Status> + Send + Sync {
    fn clone_box(&self) -> Box<dyn ObjectHooks>;
}

impl<H: Hooks<Response<Body>, Status> + Clone + Send + Sync + 'static> ObjectHooks for H {
    fn clone_box(&self) -> Box<dyn ObjectHooks> {
        Box::new(self.clone())
    }
}

impl Clone for BoxedHooks {
    fn clone(&self) -> Self {
        BoxedHooks(self.0.clone_box())
    }
}

/// Whether `status` is a copy left behind by the cap (see [`left_behind_by_the_cap`]): the
/// layer's own doing, which [`BoxedHooks`] answers for itself, whatever hooks it holds.
///
/// [`left_behind_by_the_cap`]: super::attempt::left_behind_by_the_cap
fn left_behind(status: &Status) -> bool {
    super::attempt::left_behind_by_the_cap(status)
}

/// The layer's hooks, whichever they are, with one rule of the layer's own before them: a copy
/// left behind by the cap (another copy took the body past it; this one was not sent, or could
/// not carry the body) is the client's own doing, not a server's outcome. It never reaches the
/// held hooks (a user's `retry_if` could not tell it from a server's `UNAVAILABLE`), never ends
/// the call (retried, and so refused by the cap: the copy holding the body answers), and never
/// counts for the breaker, the throttle or the adaptive throttle. Every other answer is the held
/// hooks' ([`forward_hooks!`] writes the `Hooks` impl).
impl ForwardHooks<Response<Body>, Status> for BoxedHooks {
    type Inner = dyn ObjectHooks;

    fn inner(&mut self) -> &mut Self::Inner {
        &mut *self.0
    }
    fn inner_ref(&self) -> &Self::Inner {
        &*self.0
    }

    fn retry_if(&mut self, error: &Status) -> bool {
        // The error is always a `Status`, whose class the crate knows: hooks of the user's that
        // state none take it (RESOURCE_EXHAUSTED is throttling), as after `transient`.
        crate::classify::effect::note_class(error, || crate::error_class(error));
        left_behind(error) || self.0.retry_if(error)
    }
    fn retry_after(&mut self, error: &Status) -> Option<Duration> {
        if left_behind(error) {
            return None;
        }
        self.0.retry_after(error)
    }
    fn delay_for(&mut self, error: &Status, attempt: u32, computed: Duration) -> Option<Duration> {
        if left_behind(error) {
            return None;
        }
        self.0.delay_for(error, attempt, computed)
    }
    fn on_retry(&mut self, error: &Status, context: &crate::RetryContext, delay: Duration) {
        if !left_behind(error) {
            self.0.on_retry(error, context, delay);
        }
    }
    fn is_timeout(&mut self, error: &Status) -> bool {
        !left_behind(error) && self.0.is_timeout(error)
    }
    fn class(&mut self, error: &Status) -> ErrorClass {
        if left_behind(error) {
            return crate::error_class(error);
        }
        self.0.class(error)
    }
    fn error_failed(&mut self, error: &Status) -> bool {
        !left_behind(error) && self.0.error_failed(error)
    }
    fn counts_as_failure(&mut self, error: &Status) -> bool {
        !left_behind(error) && self.0.counts_as_failure(error)
    }
}

forward_hooks!(impl[] Hooks<Response<Body>, Status> for BoxedHooks);

/// Copies the request for each attempt (its recorded body, [`ReplayBody`]), with
/// `grpc-previous-rpc-attempts` on every retry and hedge; refuses a retry or a hedge once the
/// body went past its cap (A6: the call is committed to the attempt that sent it).
///
/// [`ReplayBody`]: crate::http::ReplayBody
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GrpcReplay;

impl Replay<AttemptRequest> for GrpcReplay {
    fn replay(&self, request: &AttemptRequest) -> AttemptRequest {
        let mut copy = http::Request::new(request.body().clone());
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        #[cfg(feature = "spans")]
        super::attempt::attempt_made(request.uri().path());
        if let Some(previous) = crate::context()
            .map(|c| c.attempt().saturating_sub(1))
            .filter(|&n| n > 0)
        {
            copy.headers_mut()
                .insert(&PREVIOUS_ATTEMPTS, http::HeaderValue::from(previous));
        }
        copy
    }
}

impl RetryRequest<AttemptRequest, Response<Body>, Status> for GrpcReplay {
    fn retry_request(
        &self,
        request: &AttemptRequest,
        outcome: Result<&Response<Body>, &Status>,
        retryable: bool,
    ) -> bool {
        let _ = request;
        // A failed attempt's status, for its span (an answered one's is recorded as it settles:
        // the engine asks about responses only with a `retry_if_ok`).
        #[cfg(feature = "spans")]
        if let Err(status) = outcome {
            crate::engine::spans::note_attempt(
                "rpc.grpc.status_code",
                i64::from(status.code() as i32),
                crate::engine::spans::ErrorType::Name(crate::config::grpc::code_name(
                    status.code(),
                )),
            );
        }
        #[cfg(not(feature = "spans"))]
        let _ = outcome;
        retryable
    }

    /// A body past its cap: the call is committed to the copy that sent it (A6); the copies in
    /// flight still answer, nothing more starts.
    fn retry_refused(&self, request: &AttemptRequest) -> Option<GiveUpReason> {
        request
            .body()
            .is_capped()
            .then_some(GiveUpReason::NotRetryable)
    }

    fn hedge_allowed(&self, request: &AttemptRequest) -> bool {
        !request.body().is_capped()
    }

    fn finish(&self, outcome: &mut Result<Response<Body>, Status>, attempts: u32) {
        // A6: "The client library may also set this entry in the received initial metadata".
        let previous = attempts.saturating_sub(1);
        if previous > 0 {
            match outcome {
                Ok(response) => {
                    response
                        .headers_mut()
                        .insert(&PREVIOUS_ATTEMPTS, http::HeaderValue::from(previous));
                }
                Err(status) => {
                    status
                        .metadata_mut()
                        .insert(PREVIOUS_ATTEMPTS.as_str(), MetadataValue::from(previous));
                }
            }
        }
    }
}

/// Takes the copies the cap left behind unsent (`unsent`) off the final outcome's
/// `grpc-previous-rpc-attempts` ([`GrpcReplay`]'s `finish` counts every attempt the engine
/// started): A6 counts the attempts sent. Such copies come after the copy holding the body (the
/// cap was passed before they could be sent, and nothing starts after it), so no copy sent
/// counted them in its own header.
pub(crate) fn uncount_unsent(outcome: &mut Result<Response<Body>, Status>, unsent: u32) {
    if unsent == 0 {
        return;
    }
    let counted = |value: Option<&[u8]>| {
        value
            .and_then(|v| std::str::from_utf8(v).ok()?.parse::<u32>().ok())
            .map(|n| n.saturating_sub(unsent))
    };
    match outcome {
        Ok(response) => {
            let headers = response.headers_mut();
            match counted(
                headers
                    .get(&PREVIOUS_ATTEMPTS)
                    .map(http::HeaderValue::as_bytes),
            ) {
                Some(0) => drop(headers.remove(&PREVIOUS_ATTEMPTS)),
                Some(sent) => drop(headers.insert(&PREVIOUS_ATTEMPTS, sent.into())),
                None => {}
            }
        }
        Err(status) => {
            let metadata = status.metadata_mut();
            let key = PREVIOUS_ATTEMPTS.as_str();
            match counted(metadata.get(key).map(MetadataValue::as_bytes)) {
                Some(0) => drop(metadata.remove(key)),
                Some(sent) => drop(metadata.insert(key, MetadataValue::from(sent))),
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn status_with_pushback(value: &str) -> Status {
        let mut status = Status::unavailable("down");
        status
            .metadata_mut()
            .insert(PUSHBACK, value.parse().unwrap());
        status
    }

    #[test]
    fn pushback_values_as_a6_reads_them() {
        let ms = Duration::from_millis;
        assert_eq!(pushback(&Status::unavailable("x")), Pushback::None);
        assert_eq!(
            pushback(&status_with_pushback("300")),
            Pushback::After(ms(300))
        );
        assert_eq!(pushback(&status_with_pushback("0")), Pushback::After(ms(0)));
        assert_eq!(
            pushback(&status_with_pushback("2147483647")),
            Pushback::After(ms(2_147_483_647))
        );
        for (lenient, ms) in [("0300", 300), ("+300", 300), ("-0", 0)] {
            assert_eq!(
                pushback(&status_with_pushback(lenient)),
                Pushback::After(Duration::from_millis(ms))
            );
        }
        for stop in [
            "-1",
            "-2147483648",
            "abc",
            "",
            "1.5",
            "2147483648",
            " 300",
            "300ms",
        ] {
            assert_eq!(
                pushback(&status_with_pushback(stop)),
                Pushback::Stop,
                "{stop:?}"
            );
        }
    }

    #[test]
    fn backoff_grows_to_its_cap_and_saturates() {
        let ms = Duration::from_millis;
        let base = |n| backoff_base(ms(100), 2.0, ms(1000), n);
        assert_eq!(base(1), ms(100));
        assert_eq!(base(2), ms(200));
        assert_eq!(base(4), ms(800));
        assert_eq!(base(5), ms(1000));
        assert_eq!(base(u32::MAX), ms(1000));
        // A multiplier below one shrinks the delay (A6 allows any positive multiplier).
        assert_eq!(backoff_base(ms(100), 0.5, ms(1000), 2), ms(50));
        assert_eq!(
            backoff_base(Duration::MAX, f64::MAX, Duration::MAX, 3),
            Duration::MAX
        );
    }

    #[test]
    fn jitter_stays_within_a6s_range() {
        crate::seed_rng(3);
        let base = Duration::from_secs(1);
        let draws: Vec<Duration> = (0..2000).map(|_| jittered(base)).collect();
        assert!(
            draws
                .iter()
                .all(|d| *d >= base * 8 / 10 && *d <= base * 12 / 10)
        );
        assert!(draws.iter().any(|d| *d < base * 85 / 100));
        assert!(draws.iter().any(|d| *d > base * 115 / 100));
    }

    fn retry_mode() -> Mode {
        Mode::Retry {
            codes: Codes::new(&[Code::Unavailable]),
            initial: Duration::from_millis(100),
            multiplier: 2.0,
            max: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_pushback_is_the_next_delay_exactly_and_restarts_the_backoff() {
        crate::seed_rng(1);
        let mut hooks = GrpcHooks::new(retry_mode(), None);
        let plain = Status::unavailable("down");
        let pushed = status_with_pushback("300");
        let near = |d: Duration, base_ms: u64| {
            let base = Duration::from_millis(base_ms);
            d >= base * 8 / 10 && d <= base * 12 / 10
        };
        let delay = |hooks: &mut GrpcHooks, status: &Status| {
            assert!(hooks.retry_if(status));
            hooks.delay_for(status, 0, Duration::ZERO).unwrap()
        };
        assert!(near(delay(&mut hooks, &plain), 100));
        assert!(near(delay(&mut hooks, &plain), 200));
        assert_eq!(delay(&mut hooks, &pushed), Duration::from_millis(300));
        // n counts again from the pushback: the initial backoff.
        assert!(near(delay(&mut hooks, &plain), 100));
        assert!(near(delay(&mut hooks, &plain), 200));
    }

    #[test]
    fn a_negative_pushback_or_another_code_is_not_retried() {
        let mut hooks = GrpcHooks::new(retry_mode(), None);
        // One of the codes: the server's failure, but no further attempt.
        assert!(hooks.retry_if(&status_with_pushback("-1")));
        assert_eq!(hooks.retry_refused(), Some(GiveUpReason::RetryAfterTooLong));
        assert!(
            !hooks.hedge_allowed(),
            "no hedge after a pushback saying stop"
        );
        let mut hooks = GrpcHooks::new(retry_mode(), None);
        assert!(!hooks.retry_if(&Status::invalid_argument("bad")));
        assert!(!hooks.error_failed(&Status::invalid_argument("bad")));
        assert_eq!(hooks.retry_refused(), None);
        assert!(hooks.hedge_allowed());
    }

    #[test]
    fn the_throttle_counts_failures_and_successes() {
        let throttle = RetryThrottle::new(10, 0.5).unwrap();
        let mut hooks = GrpcHooks::new(retry_mode(), Some(throttle.clone()));
        // 10 tokens: failures take one each; at 5 (half) retries stop.
        for _ in 0..4 {
            assert!(hooks.retry_if(&Status::unavailable("down")));
            assert_eq!(hooks.retry_refused(), None);
        }
        assert!(hooks.retry_if(&Status::unavailable("down")));
        assert_eq!(
            hooks.retry_refused(),
            Some(GiveUpReason::BudgetExhausted),
            "at half: no retry"
        );
        assert!(!hooks.hedge_allowed());
        // Not a failure: the tokens stay.
        assert!(!hooks.retry_if(&Status::invalid_argument("bad")));
        let before = throttle.tokens();
        let ok = Response::new(Body::empty());
        assert!(!hooks.retry_if_ok(&ok));
        assert!((throttle.tokens() - before - 0.5).abs() < 1e-9);
        assert!(hooks.hedge_allowed());
    }

    /// A status of `code` whose trailers carry `values` as its pushback, one entry each.
    fn status_with_pushbacks(code: Code, values: &[&'static str]) -> Status {
        let mut status = Status::new(code, "scripted");
        for value in values {
            status
                .metadata_mut()
                .append(PUSHBACK, MetadataValue::from_static(value));
        }
        status
    }

    /// grpc-java `RetriableStreamTest.java`, the six `throttledStream_*` cases: a throttle of 4
    /// tokens, ratio 0.8 (threshold 2), that another call already took to 3; then this call's
    /// status, retryable or not, with no pushback, a pushback allowing a retry (123 ms) or one
    /// saying not to retry (`""`). A failure for the throttle leaves 2 (not above the
    /// threshold). The cases with a "don't retry" pushback count whatever the status, as A6 says
    /// and grpc-go (`shouldRetry`) does. (grpc-java also retries a status that is not retryable
    /// after a pushback allowing it; grpc-go and this layer do not: A6 retries after a pushback
    /// only "when it is appropriate to retry the RPC".)
    #[test]
    fn the_throttle_counts_as_grpc_java_and_grpc_go_do() {
        let codes = [Code::Unavailable];
        let retryable = Code::Unavailable;
        let fatal = Code::InvalidArgument;
        // (code, pushback, retried, failure for the throttle)
        let cases: [(Code, &[&str], bool, bool); 6] = [
            (retryable, &[], true, true), // FailWithRetriableStatusCode_WithoutPushback
            (fatal, &[], false, false),   // FailWithNonRetriableStatusCode_WithoutPushback
            (retryable, &["123"], true, true), // ..._WithRetriablePushback
            (fatal, &["123"], false, false), // FailWithNonRetriableStatusCode_WithRetriablePushback
            (retryable, &[""], true, true), // FailWithRetriableStatusCode_WithNonRetriablePushback
            (fatal, &[""], false, true),  // FailWithNonRetriableStatusCode_WithNonRetriablePushback
        ];
        for (code, values, retried, counted) in cases {
            let throttle = RetryThrottle::new(4, 0.8).unwrap();
            // Another call in the channel takes one token: 3 left, above the threshold of 2.
            assert!(throttle.record_failure());
            let mut hooks = GrpcHooks::new(
                Mode::Retry {
                    codes: Codes::new(&codes),
                    initial: Duration::from_millis(10),
                    multiplier: 1.0,
                    max: Duration::from_millis(10),
                },
                Some(throttle.clone()),
            );
            let status = status_with_pushbacks(code, values);
            let case = format!("{code:?} with pushback {values:?}");
            assert_eq!(hooks.retry_if(&status), retried, "{case}");
            let tokens = if counted { 2.0 } else { 3.0 };
            assert!((throttle.tokens() - tokens).abs() < 1e-9, "{case}");
            assert_eq!(throttle.allows_retry(), !counted, "{case}");
            if counted {
                // Either the throttle (now at its threshold) or the pushback refuses a retry.
                assert!(hooks.retry_refused().is_some(), "{case}");
            }
        }
    }

    /// grpc-go `test/retry_test.go`, `TestRetryStreaming`, "Negative server pushback - no
    /// retry", "Non-numeric server pushback - no retry" and "Multiple server pushback values - no
    /// retry" (`stream.go`'s `shouldRetry`: "Server retry pushback specified multiple values;
    /// not retrying", after `retryThrottler.throttle()`): each is one attempt and a failure for
    /// the throttle, on a retryable status and on one that is not.
    #[test]
    fn a_stop_pushback_is_one_attempt_and_a_failure_for_the_throttle() {
        for values in [&["-1"][..], &["xxx"], &["100", "10"], &["10", "10"]] {
            assert_eq!(
                pushback(&status_with_pushbacks(Code::Unavailable, values)),
                Pushback::Stop,
                "{values:?}"
            );
            for code in [Code::Unavailable, Code::InvalidArgument, Code::Internal] {
                let throttle = RetryThrottle::new(10, 0.5).unwrap();
                let mut hooks = GrpcHooks::new(retry_mode(), Some(throttle.clone()));
                let status = status_with_pushbacks(code, values);
                let retried = hooks.retry_if(&status);
                assert_eq!(retried, code == Code::Unavailable, "{code:?} {values:?}");
                assert_eq!(
                    hooks.retry_refused(),
                    Some(GiveUpReason::RetryAfterTooLong),
                    "no retry after {values:?}"
                );
                assert!(!hooks.hedge_allowed(), "no hedge after {values:?}");
                assert!(
                    (throttle.tokens() - 9.0).abs() < 1e-9,
                    "{code:?} {values:?}: one token taken"
                );
            }
        }
        // One value allowing a retry is waited exactly; no pushback at all is the backoff.
        let mut hooks = GrpcHooks::new(retry_mode(), None);
        let once = status_with_pushbacks(Code::Unavailable, &["100"]);
        assert!(hooks.retry_if(&once));
        assert_eq!(hooks.retry_refused(), None);
        assert_eq!(
            hooks.delay_for(&once, 1, Duration::ZERO),
            Some(Duration::from_millis(100))
        );
    }

    /// A hedged call's copy with a "don't retry" pushback on a non-fatal status stops further
    /// hedges but does not end the call (grpc-java `hedging_pushback_negative`); on a fatal
    /// status it ends the call, and the throttle counts it either way.
    #[test]
    fn a_hedges_stop_pushback_counts_for_the_throttle() {
        for (code, goes_on) in [(Code::Unavailable, true), (Code::Internal, false)] {
            let throttle = RetryThrottle::new(10, 0.5).unwrap();
            let mut hooks = GrpcHooks::new(
                Mode::Hedge {
                    codes: Codes::new(&[Code::Unavailable]),
                },
                Some(throttle.clone()),
            );
            assert_eq!(
                hooks.retry_if(&status_with_pushbacks(code, &["-1"])),
                goes_on,
                "{code:?}"
            );
            assert!(!hooks.hedge_allowed(), "{code:?}");
            assert!((throttle.tokens() - 9.0).abs() < 1e-9, "{code:?}");
        }
    }

    #[test]
    fn hedges_follow_a_non_fatal_status_at_once() {
        let mut hooks = GrpcHooks::new(
            Mode::Hedge {
                codes: Codes::new(&[Code::Unavailable]),
            },
            None,
        );
        let status = Status::unavailable("down");
        assert!(hooks.retry_if(&status));
        assert_eq!(
            hooks.delay_for(&status, 1, Duration::from_secs(1)),
            Some(Duration::ZERO)
        );
        assert!(!hooks.retry_if(&Status::internal("fatal")));
    }
}
