//! gRPC with [tonic](https://docs.rs/tonic) 0.14 (feature `tonic`): which [`Status`](https://docs.rs/tonic/0.14/tonic/struct.Status.html)
//! codes are worth retrying, [`codes`] to retry on a set of codes of your choosing, and the `Status` a timed-out
//! attempt or a guard's rejection becomes, so that `timeout = "300ms"`, `circuit_breaker`,
//! `throttle` and `bulkhead` need nothing else on a function returning `Result<_, Status>`.
//!
//! It also holds gRPC's own retry rules (gRFC A6) for a tonic channel: [`GrpcRetryLayer`]
//! (retries, hedging, pushback, `grpc-previous-rpc-attempts`, transparent retry, the call's
//! deadline, replayed request bodies), configured in code ([`GrpcRetryPolicy`],
//! [`HedgingPolicy`]) or from a service config's JSON ([`ServiceConfig`]), throttled by
//! [`RetryThrottle`].
//!
//! ```
//! // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     use std::time::Duration;
//!     use reattempt::{RetryPolicy, transient};
//!     use tonic::{Code, Status};
//!
//!     let policy = RetryPolicy::builder()
//!         .max_attempts(3)
//!         .timeout(Duration::from_millis(300))
//!         .build()
//!         .unwrap();
//!     let calls = std::cell::Cell::new(0);
//!     let reply = policy
//!         .retry(|| async {
//!             calls.set(calls.get() + 1);
//!             match calls.get() {
//!                 1 => Err(Status::unavailable("connection refused")),
//!                 2 => std::future::pending().await, // cut by `timeout`: DEADLINE_EXCEEDED
//!                 _ => Ok("SERVING"),
//!             }
//!         })
//!         .retry_if(transient)
//!         // A health check is a read: safe to repeat after a timeout, which may have acted.
//!         .idempotent(true)
//!         .await;
//!     assert_eq!(reply.unwrap(), "SERVING");
//!     assert_eq!(calls.get(), 3);
//! }
//! ```
//!
//! # What is retried
//!
//! [`Transient`] for [`Status`](https://docs.rs/tonic/0.14/tonic/struct.Status.html) follows [gRFC A6](https://github.com/grpc/proposal/blob/master/A6-client-retries.md),
//! which leaves `retryableStatusCodes` to each service but says that by default "only status
//! codes that indicate the service did not process the request should be retried", and gives
//! `UNAVAILABLE` as its example. A status is transient when it is
//!
//! | status | why | effect |
//! |---|---|---|
//! | `UNAVAILABLE` | the code's own meaning: the service could not take the call, "most likely a transient condition" | unknown (a proxy answers it after a reset of a call the server took) |
//! | `DEADLINE_EXCEEDED` | the answer did not come in time; as an HTTP 504, or this crate's own per-attempt `timeout` | unknown |
//! | `CANCELLED` "Timeout expired" | tonic's own deadline: the client's (`Endpoint::timeout`, `Request::set_timeout`), with a [`tonic::TimeoutExpired`](https://docs.rs/tonic/0.14/tonic/struct.TimeoutExpired.html) among its sources, or a tonic server's (`Server::timeout`, or the client's `grpc-timeout`), which arrives as that code and message | unknown |
//! | any code over a transport failure | a connection refused or reset, a broken pipe, a connection hyper closed before the call completed: tonic reports these as `UNKNOWN` "transport error", `CANCELLED` "operation was canceled" or `UNAVAILABLE` "tcp connect error", and keeps the cause as the status's [`source`](std::error::Error::source), where it is recognised (see below) | not done for a connection never made (a [`tonic::ConnectError`](https://docs.rs/tonic/0.14/tonic/struct.ConnectError.html), a refused connection); unknown for the rest |
//!
//! The effect ([`Effect`](crate::Effect)) is the crate's rule for calls that are not safe to
//! repeat: [`transient`](crate::transient) retries an unknown effect only on a call that says it
//! is idempotent (`idempotent = true`; see [`Effect`](crate::Effect)). A6's own layer
//! ([`GrpcRetryLayer`]) retries the codes its service config lists, as A6 says: that list is the
//! service owner's judgement, obeyed as written.
//!
//! and every other status is not: `INVALID_ARGUMENT`, `NOT_FOUND`, `ALREADY_EXISTS`,
//! `PERMISSION_DENIED`, `UNAUTHENTICATED`, `FAILED_PRECONDITION`, `OUT_OF_RANGE`,
//! `UNIMPLEMENTED` and `DATA_LOSS` repeat on every attempt; `INTERNAL` and `UNKNOWN` from a server
//! may come after the call did its work (A6's example: a delete that failed with `INTERNAL` after
//! deleting); `ABORTED` asks the client to retry "at a higher level" (a whole read-modify-write
//! sequence, not the one call); `RESOURCE_EXHAUSTED` is also what tonic answers for a message
//! over its size limit, which no retry fixes; `CANCELLED` without a timeout is the caller's own
//! choice. A service that knows better lists its codes with [`codes`].
//!
//! A transport failure is recognised in the status's chain of sources: a [`tonic::ConnectError`](https://docs.rs/tonic/0.14/tonic/struct.ConnectError.html)
//! (the connection could not be made), a `hyper::Error` that is
//! [`is_canceled`](https://docs.rs/hyper/1/hyper/struct.Error.html#method.is_canceled),
//! `is_incomplete_message`, `is_closed` or `is_timeout` (the connection went away before the call
//! completed), or an [`std::io::Error`] of kind `ConnectionRefused`, `ConnectionReset`,
//! `ConnectionAborted`, `NotConnected`, `BrokenPipe`, `UnexpectedEof` or `TimedOut`. Sources exist
//! only on the client's side (a server's status crosses the wire as a code and a message), so a
//! status with such a source never comes from the server's application. A status this crate made
//! from a guard's rejection (see below) is not transient, as the rejection itself is never
//! retried.
//!
//! [`Transient::is_timeout`] (what a [`RetryBudget`](crate::RetryBudget) charges `timeout_cost`
//! for) is true for `DEADLINE_EXCEEDED`, for tonic's `CANCELLED` "Timeout expired", and for a
//! status with a [`tonic::TimeoutExpired`](https://docs.rs/tonic/0.14/tonic/struct.TimeoutExpired.html), an [`Elapsed`], an I/O error of kind `TimedOut` or a
//! timed-out `hyper::Error` among its sources.
//!
//! # The `Status` of the runtime's own failures
//!
//! | failure | `Status` | its source |
//! |---|---|---|
//! | a timed-out attempt ([`Elapsed`]) | `DEADLINE_EXCEEDED` "attempt timed out" | the [`Elapsed`] |
//! | an open breaker's rejection ([`BreakerOpen`]) | `UNAVAILABLE` "circuit breaker is open" | the [`BreakerOpen`] |
//! | the adaptive throttle's rejection ([`Throttled`]) | `UNAVAILABLE` "rejected by the adaptive throttle" | the [`Throttled`] |
//! | a full bulkhead ([`BulkheadFull`]) | `UNAVAILABLE` "bulkhead full" | the [`BulkheadFull`] |
//!
//! The source is there for code that asks (`status.source()` and `downcast_ref`), and lets
//! [`Transient`] tell a rejection (never retried) from a server's `UNAVAILABLE`. To choose other
//! statuses, give the conversion where the call is written: `timeout_into`, `breaker_open_into`,
//! `throttled_into`, `bulkhead_full_into`.
//!
//! # Service configs
//!
//! [`ServiceConfig`] reads a gRPC service config's JSON (`methodConfig` with A6's
//! `retryPolicy`, `hedgingPolicy` and `timeout`; `retryThrottling`), validated as gRFC A6 says,
//! each error naming its field's path ([`ServiceConfigError`]); [`ServiceConfig::method_config`]
//! finds a request path's [`MethodConfig`] by gRPC's name matching. [`RetryThrottle`] is A6's
//! per-channel retry throttle (also at [`crate::RetryThrottle`]).

use std::error::Error as StdError;
use std::sync::Arc;

use ::tonic::{Code, ConnectError, Status, TimeoutExpired};

pub use crate::config::grpc::{
    Codes, GrpcRetryPolicy, HedgingPolicy, MethodConfig, ServiceConfig, ServiceConfigError,
};
pub use crate::guards::retry_throttle::RetryThrottle;

use crate::classify::Transient;
use crate::clients::grpc::{PUSHBACK, Pushback, pushback};
use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromElapsed, FromThrottled};
use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};

// The gRPC layer (gRFC A6's retries, hedging and throttle for a tonic channel).
pub use crate::clients::grpc::{
    DEFAULT_MAX_ATTEMPTS_CAP, EnginePolicy, GrpcPolicies, GrpcResponseFuture, GrpcRetryLayer,
    GrpcRetryService, TransientStatuses,
};
// A server-streaming call resumed from a checkpoint through a tonic client.
pub use crate::clients::grpc::stream::{OpenStream, StreamStatuses, resume_streaming};

/// A predicate retrying exactly the statuses whose code is one of `codes`, for
/// `retry_if = reattempt::tonic::codes(&[…])` and the closure API's
/// `.retry_if(reattempt::tonic::codes(&[…]))`. It is `Copy` and `'static` (the codes are kept in
/// a bit set), and is called as `predicate(&status)`.
///
/// It looks at the code alone: a killed server's `UNKNOWN` "transport error" is not retried by
/// `codes(&[Code::Unavailable])`. For [`Transient`]'s rule plus some codes, write
/// `|s: &Status| reattempt::transient(s) || codes(&[Code::Aborted])(s)`.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use reattempt::{RetryPolicy, tonic::codes};
///     use tonic::{Code, Status};
///
///     let retryable = codes(&[Code::Unavailable, Code::Aborted, Code::ResourceExhausted]);
///     assert!(retryable(&Status::aborted("transaction conflict")));
///     assert!(!retryable(&Status::invalid_argument("no such field")));
///
///     let calls = std::cell::Cell::new(0);
///     let reply = RetryPolicy::default()
///         .retry(|| async {
///             calls.set(calls.get() + 1);
///             if calls.get() == 1 { Err(Status::aborted("conflict")) } else { Ok(calls.get()) }
///         })
///         .retry_if(retryable)
///         .await;
///     assert_eq!(reply.unwrap(), 2);
/// }
/// ```
pub fn codes(codes: &[Code]) -> impl Fn(&Status) -> bool + Copy + Send + Sync + 'static {
    let set = codes.iter().fold(0_u32, |set, code| set | bit(*code));
    // Notes the status's class, as the crate's judgement does: RESOURCE_EXHAUSTED is throttling.
    move |status: &Status| {
        crate::classify::effect::noting_class(
            status,
            || status.class(),
            set & bit(status.code()) != 0,
        )
    }
}

/// `code`'s bit in a [`codes`] set (the 17 codes are 0 to 16).
fn bit(code: Code) -> u32 {
    1_u32 << (code as u32 & 31)
}

/// [gRFC A6](https://github.com/grpc/proposal/blob/master/A6-client-retries.md)'s
/// "did not process the request" codes and transport failures are transient (feature `tonic`):
/// `UNAVAILABLE`, `DEADLINE_EXCEEDED`, tonic's own deadline (`CANCELLED` "Timeout expired"), and
/// any status whose sources show a dropped or refused connection. The table and the reasons
/// are in the [module's documentation](crate::tonic).
///
/// ```
/// use reattempt::Transient;
/// use tonic::Status;
///
/// use reattempt::Effect;
///
/// assert!(Status::unavailable("draining").is_transient());
/// // A server's UNAVAILABLE may come after it acted (a proxy's answer to a reset): retried by
/// // `reattempt::transient` on an idempotent call only.
/// assert_eq!(Status::unavailable("draining").effect(), Effect::Unknown);
/// assert!(Status::deadline_exceeded("slow backend").is_timeout());
/// assert!(!Status::invalid_argument("bad id").is_transient());
/// assert!(!Status::internal("boom").is_transient());
///
/// // What a killed server leaves a client with: an `UNKNOWN` over a reset connection.
/// let mut killed = Status::unknown("transport error");
/// killed.set_source(std::sync::Arc::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)));
/// assert!(killed.is_transient());
/// ```
impl Transient for Status {
    fn is_transient(&self) -> bool {
        let transient = is_transient_status(self) && crate::may_repeat(self.effect());
        crate::classify::effect::noting_class(self, || self.class(), transient)
    }

    /// A transient status whose sources show the connection was never made (a
    /// [`tonic::ConnectError`](https://docs.rs/tonic/0.14/tonic/struct.ConnectError.html), a refused connection) proves nothing was sent: not done. Every
    /// other transient status (a server's `UNAVAILABLE`, which a proxy also answers after the
    /// server took the call; a reset, EOF or broken pipe mid-call; a deadline) may come after
    /// the server acted: unknown. The rest: unstated.
    fn effect(&self) -> crate::Effect {
        if !is_transient_status(self) {
            crate::Effect::Unstated
        } else if sources(self).any(is_never_sent) {
            crate::Effect::NotDone
        } else {
            crate::Effect::Unknown
        }
    }

    fn is_timeout(&self) -> bool {
        self.code() == Code::DeadlineExceeded
            || (self.code() == Code::Cancelled && self.message() == TimeoutExpired(()).to_string())
            || sources(self).any(is_timeout)
    }

    /// `RESOURCE_EXHAUSTED` (retried when listed in [`codes`]) is throttling; a deadline a
    /// timeout; the rest transient.
    fn class(&self) -> crate::ErrorClass {
        if self.code() == Code::ResourceExhausted {
            crate::ErrorClass::Throttling
        } else if self.is_timeout() {
            crate::ErrorClass::Timeout
        } else {
            crate::ErrorClass::Transient
        }
    }
}

/// The table of [`Transient` for `Status`](Status), before the effect's rule.
fn is_transient_status(status: &Status) -> bool {
    if sources(status).any(is_rejection) || pushback_says_stop(status) {
        return false;
    }
    status.code() == Code::Unavailable
        || status.is_timeout()
        || sources(status).any(is_transport_failure)
}

/// A connection that could not be made: the call was never sent.
fn is_never_sent(error: &(dyn StdError + 'static)) -> bool {
    error.is::<ConnectError>()
        || error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
}

/// The server's `grpc-retry-pushback-ms` says not to retry: negative, malformed, or given more
/// than once (gRFC A6, grpc-go). A rejection this crate converts carries `-1`, so that a client
/// one hop away, which sees the status but not its in-process source, does not retry it either.
fn pushback_says_stop(status: &Status) -> bool {
    pushback(status) == Pushback::Stop
}

/// A rejection's status: `UNAVAILABLE` with its text, its source, and A6's "do not retry"
/// pushback (`-1`), which crosses the wire with the status (a server that returns it as its own
/// answer tells its clients not to retry).
fn rejection(source: impl StdError + Send + Sync + 'static) -> Status {
    let mut status = Status::unavailable(source.to_string());
    status
        .metadata_mut()
        .insert(PUSHBACK, tonic::metadata::MetadataValue::from_static("-1"));
    with_source(status, source)
}

/// `status`'s sources, the nearest first.
fn sources(status: &Status) -> impl Iterator<Item = &(dyn StdError + 'static)> {
    std::iter::successors(status.source(), |error: &&(dyn StdError + 'static)| {
        (*error).source()
    })
}

/// A rejection by one of the runtime's guards, which is never retried.
fn is_rejection(error: &(dyn StdError + 'static)) -> bool {
    error.is::<BreakerOpen>() || error.is::<Throttled>() || error.is::<BulkheadFull>()
}

/// A wait that ran out: tonic's, this crate's, the socket's or hyper's.
fn is_timeout(error: &(dyn StdError + 'static)) -> bool {
    error.is::<TimeoutExpired>()
        || error.is::<Elapsed>()
        || error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        || error
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_timeout)
}

/// A connection that could not be made, or went away before the call completed.
fn is_transport_failure(error: &(dyn StdError + 'static)) -> bool {
    use std::io::ErrorKind::{
        BrokenPipe, ConnectionAborted, ConnectionRefused, ConnectionReset, NotConnected,
        UnexpectedEof,
    };
    if error.is::<ConnectError>() {
        return true;
    }
    if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
        return hyper.is_canceled() || hyper.is_incomplete_message() || hyper.is_closed();
    }
    error.downcast_ref::<std::io::Error>().is_some_and(|io| {
        matches!(
            io.kind(),
            ConnectionRefused
                | ConnectionReset
                | ConnectionAborted
                | NotConnected
                | BrokenPipe
                | UnexpectedEof
        )
    })
}

/// A `status` with `source` as its [`source`](std::error::Error::source).
fn with_source(mut status: Status, source: impl StdError + Send + Sync + 'static) -> Status {
    status.set_source(Arc::new(source));
    status
}

/// A timed-out attempt is `DEADLINE_EXCEEDED` "attempt timed out", with the [`Elapsed`] as its
/// source (feature `tonic`): transient, and a timeout.
///
/// ```
/// use std::error::Error;
/// use reattempt::{Elapsed, FromElapsed, Transient};
/// use tonic::{Code, Status};
///
/// let status = Status::from_elapsed(Elapsed::new());
/// assert_eq!(status.code(), Code::DeadlineExceeded);
/// assert_eq!(status.message(), "attempt timed out");
/// assert!(status.source().unwrap().is::<Elapsed>());
/// assert!(status.is_transient() && status.is_timeout());
/// ```
impl FromElapsed for Status {
    fn from_elapsed(elapsed: Elapsed) -> Self {
        with_source(Status::deadline_exceeded(elapsed.to_string()), elapsed)
    }
}

/// A call an open breaker rejected is `UNAVAILABLE` "circuit breaker is open", with the
/// [`BreakerOpen`] as its source and `grpc-retry-pushback-ms: -1` in its metadata (feature
/// `tonic`). Not transient: the rejection is never retried, here or, when a server returns it,
/// by its client (A6's pushback crosses the wire; the source does not).
///
/// ```
/// use std::error::Error;
/// use reattempt::{BreakerOpen, FromBreakerOpen, Transient};
/// use tonic::{Code, Status};
///
/// let status = Status::from_breaker_open(BreakerOpen::new());
/// assert_eq!(status.code(), Code::Unavailable);
/// assert_eq!(status.message(), "circuit breaker is open");
/// assert!(status.source().unwrap().is::<BreakerOpen>());
/// assert!(!status.is_transient());
/// // Sent on by a server, it tells the next client not to retry (gRFC A6's pushback):
/// let received = Status::with_metadata(status.code(), status.message(), status.metadata().clone());
/// assert!(!received.is_transient());
/// ```
impl FromBreakerOpen for Status {
    fn from_breaker_open(open: BreakerOpen) -> Self {
        rejection(open)
    }
}

/// An attempt the adaptive throttle shed is `UNAVAILABLE` "rejected by the adaptive throttle",
/// with the [`Throttled`] as its source (feature `tonic`). Not transient.
///
/// ```
/// use reattempt::{FromThrottled, Throttled, Transient};
/// use tonic::{Code, Status};
///
/// let status = Status::from_throttled(Throttled::new());
/// assert_eq!(status.code(), Code::Unavailable);
/// assert_eq!(status.message(), "rejected by the adaptive throttle");
/// assert!(!status.is_transient());
/// ```
impl FromThrottled for Status {
    fn from_throttled(shed: Throttled) -> Self {
        rejection(shed)
    }
}

/// A call a full bulkhead turned away is `UNAVAILABLE` "bulkhead full", with the
/// [`BulkheadFull`] as its source (feature `tonic`). Not transient.
///
/// ```
/// use reattempt::{BulkheadFull, FromBulkheadFull, Transient};
/// use tonic::{Code, Status};
///
/// let status = Status::from_bulkhead_full(BulkheadFull::new());
/// assert_eq!(status.code(), Code::Unavailable);
/// assert_eq!(status.message(), "bulkhead full");
/// assert!(!status.is_transient());
/// ```
impl FromBulkheadFull for Status {
    fn from_bulkhead_full(full: BulkheadFull) -> Self {
        rejection(full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::transient;
    use std::io::{Error, ErrorKind};

    const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    fn over(code: Code, message: &str, source: impl StdError + Send + Sync + 'static) -> Status {
        with_source(Status::new(code, message), source)
    }

    /// The way tonic nests a cause: `tonic::transport::Error` (private here) holds the cause as
    /// its source, so the cause is one level down.
    #[derive(Debug)]
    struct Wrapped(Box<dyn StdError + Send + Sync>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("transport error")
        }
    }

    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn only_unavailable_and_deadline_exceeded_codes_are_transient() {
        for code in ALL {
            let status = Status::new(code, "from the server");
            let expected = matches!(code, Code::Unavailable | Code::DeadlineExceeded);
            assert_eq!(transient(&status), expected, "{code:?}");
            assert_eq!(
                status.is_timeout(),
                code == Code::DeadlineExceeded,
                "{code:?}"
            );
        }
    }

    #[test]
    fn transport_failures_under_any_code_are_transient() {
        for kind in [
            ErrorKind::ConnectionRefused,
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
            ErrorKind::NotConnected,
            ErrorKind::BrokenPipe,
            ErrorKind::UnexpectedEof,
        ] {
            // As tonic 0.14 reports a killed server: UNKNOWN "transport error" over hyper over io.
            let status = over(
                Code::Unknown,
                "transport error",
                Wrapped(Box::new(Error::new(kind, "stream closed"))),
            );
            assert!(transient(&status), "{kind:?}");
            assert!(!status.is_timeout(), "{kind:?}");
        }
        for kind in [
            ErrorKind::PermissionDenied,
            ErrorKind::InvalidData,
            ErrorKind::Other,
        ] {
            let status = over(Code::Unknown, "transport error", Error::new(kind, "no"));
            assert!(!transient(&status), "{kind:?}");
        }
        let refused = over(
            Code::Unavailable,
            "tcp connect error",
            ConnectError(Box::new(Error::from(ErrorKind::ConnectionRefused))),
        );
        assert!(transient(&refused));
        // A ConnectError is a transport failure whatever it holds and whatever the code.
        let connect = over(Code::Unknown, "x", ConnectError("dns".into()));
        assert!(transient(&connect));
    }

    #[test]
    fn tonic_and_our_timeouts_are_transient_timeouts() {
        // tonic 0.14's own deadline: CANCELLED "Timeout expired" over transport::Error(TimeoutExpired).
        let tonic_deadline = over(
            Code::Cancelled,
            "Timeout expired",
            Wrapped(Box::new(TimeoutExpired(()))),
        );
        assert!(transient(&tonic_deadline) && tonic_deadline.is_timeout());
        // A tonic server's own timeout, as it arrives: the code and message, no source.
        let server_deadline = Status::cancelled("Timeout expired");
        assert!(transient(&server_deadline) && server_deadline.is_timeout());
        let ours = Status::from_elapsed(Elapsed::new());
        assert!(transient(&ours) && ours.is_timeout());
        let socket = over(Code::Unknown, "x", Error::from(ErrorKind::TimedOut));
        assert!(transient(&socket) && socket.is_timeout());
        // CANCELLED alone is the caller's choice.
        let cancelled = Status::cancelled("client went away");
        assert!(!transient(&cancelled) && !cancelled.is_timeout());
    }

    #[test]
    fn rejections_become_unavailable_and_are_not_retried() {
        let rejections = [
            Status::from_breaker_open(BreakerOpen::new()),
            Status::from_throttled(Throttled::new()),
            Status::from_bulkhead_full(BulkheadFull::new()),
        ];
        for status in rejections {
            assert_eq!(status.code(), Code::Unavailable);
            assert!(!transient(&status), "{status}");
            assert!(!status.is_timeout(), "{status}");
            // As a client one hop away receives it: code, message and trailers, no source.
            let received =
                Status::with_metadata(status.code(), status.message(), status.metadata().clone());
            assert!(!transient(&received), "{received:?}");
        }
        // A pushback that allows a retry, or none, leaves UNAVAILABLE transient; a malformed
        // one, as A6 says, does not.
        let mut later = Status::unavailable("busy");
        later
            .metadata_mut()
            .insert(PUSHBACK, "250".parse().unwrap());
        assert!(transient(&later));
        let mut garbled = Status::unavailable("busy");
        garbled
            .metadata_mut()
            .insert(PUSHBACK, "soon".parse().unwrap());
        assert!(!transient(&garbled));
        // Even below a transport-looking wrapper.
        let nested = over(
            Code::Unavailable,
            "x",
            Wrapped(Box::new(BreakerOpen::new())),
        );
        assert!(!transient(&nested));
    }

    /// What `codes` promises of its predicate.
    fn assert_traits<P: Fn(&Status) -> bool + Copy + Send + Sync + 'static>(_: P) {}

    #[test]
    fn codes_matches_exactly_its_codes() {
        let chosen = [Code::Unavailable, Code::Aborted, Code::ResourceExhausted];
        let predicate = codes(&chosen);
        for code in ALL {
            assert_eq!(
                predicate(&Status::new(code, "")),
                chosen.contains(&code),
                "{code:?}"
            );
        }
        // The code alone: a transport failure under UNKNOWN is not one of them.
        let killed = over(
            Code::Unknown,
            "transport error",
            Error::from(ErrorKind::ConnectionReset),
        );
        assert!(!predicate(&killed));
        let none = codes(&[]);
        assert!(ALL.iter().all(|code| !none(&Status::new(*code, ""))));
        // Copy, Send, Sync and 'static: kept by value anywhere, used from any task.
        assert_traits(predicate);
        let copy = predicate;
        assert!(copy(&Status::aborted("")) && predicate(&Status::aborted("")));
    }
}
