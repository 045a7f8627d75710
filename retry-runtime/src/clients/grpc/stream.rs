//! A server-streaming call resumed through a tonic client (feature `tonic`):
//! [`resume_streaming`] re-opens the call from a checkpoint after a failure mid-stream, by the
//! statuses [`StreamStatuses`] says. The gRPC layer below it keeps gRFC A6's commit rule (it
//! never retries a call after its response headers): the resume is the stream driver's.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tonic::{Code, ConnectError, Status, TimeoutExpired};

use super::GrpcRetryLayer;
use super::attempt::chain;
use super::hooks::{Pushback, pushback};
use crate::config::grpc::Codes;
use crate::drivers::stream::RetryStream;
use crate::engine::hooks::Hooks;
use crate::error::Elapsed;
use crate::schedule::policy::RetryPolicy;
use crate::{Effect, ErrorClass};

/// Resumes a server-streaming call made through a tonic client (a plain `Channel` or one under
/// [`GrpcRetryLayer`]): `open(checkpoint)` makes the call from a checkpoint (your resume
/// request: the last sequence number, row key or resume token), `initial` is the first call's,
/// and `advance(&mut checkpoint, &message)` moves it past each message as the message is handed
/// on. A failure mid-stream that the rule below resumes re-opens the call from the checkpoint
/// of the last message delivered, after the policy's delay: each message reaches the consumer
/// once and in order. The rule:
///
/// - **Which statuses resume it**: [`StreamStatuses`]'s (set here to its default, the crate's
///   classification of `Status`, as [`transient`](crate::transient) says), or the codes a
///   layer retries for the method (gRFC A6's `retryableStatusCodes`):
///   `.hooks(StreamStatuses::of_method(&layer, "/pkg.Service/Method"))`.
/// - **A failure of the stream on the client's side is `UNAVAILABLE`**: an HTTP/2 stream
///   reset mid-stream (`RST_STREAM`, which tonic reports as `INTERNAL` or `CANCELLED`, h2's
///   error as its source), a lost connection, a stall cut by
///   [`idle_timeout`](RetryStream::idle_timeout), an open cut by the policy's `timeout`. The
///   stream broke; the service answered no failure, and a resume from the checkpoint repeats
///   nothing delivered. (gRPC reads an expired keepalive as `UNAVAILABLE` too, and Google's
///   Cloud clients resume a streaming read after an `RST_STREAM`.) A status the server's
///   application sent is judged by its code, and so is a reset or `GOAWAY` whose reason is the
///   server's word: `ENHANCE_YOUR_CALM` (`RESOURCE_EXHAUSTED`: slow down) and
///   `INADEQUATE_SECURITY` (`PERMISSION_DENIED`).
/// - **Pushback**: a trailing status's `grpc-retry-pushback-ms` is a floor under the next
///   delay (a retry-after hint); a negative or malformed one ends the stream with that status.
/// - **A stall**: [`idle_timeout`](RetryStream::idle_timeout) ends an attempt that gives no
///   message for that long with `DEADLINE_EXCEEDED` "attempt timed out" (tonic's
///   [`FromElapsed`](crate::FromElapsed), the [`Elapsed`] as its source), read as
///   `UNAVAILABLE` by the rule above. No idle limit by default.
/// - **Over the gRPC layer**: the layer still commits the call at its response headers (A6):
///   it retries an open that fails before them as its policy says, never a failure after. An
///   open the layer gave up on is judged by this rule too, so one open of the stream may be
///   several attempts of the layer, within the stream's schedule.
/// - **The rest is [`RetryStream`]'s**: one schedule, budget, breaker and `max_elapsed` span
///   the stream; progress starts the schedule again; a status not resumed is the stream's last
///   item; dropping the stream drops the call (tonic resets its HTTP/2 stream: the server sees
///   it cancelled). Its settings (`.idle_timeout(..)`, `.budget(..)`, `.opened()`, …) apply to
///   what this returns.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use futures_util::{StreamExt, stream};
///     use reattempt::RetryPolicy;
///     use tonic::{Response, Status};
///
///     // What a tonic client's server-streaming method returns (`client.count(request)`): here
///     // a server that streams the numbers after `after`, and ends every stream it starts
///     // before 6 with UNAVAILABLE after two of them.
///     async fn count(
///         after: u64,
///     ) -> Result<Response<impl futures_util::Stream<Item = Result<u64, Status>>>, Status> {
///         let numbers = (after + 1..=6).take(2).map(Ok);
///         let draining = (after + 2 < 6).then(|| Err(Status::unavailable("draining")));
///         Ok(Response::new(stream::iter(numbers.chain(draining))))
///     }
///
///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
///     let mut numbers = reattempt::tonic::resume_streaming(
///         &policy,
///         |after: u64| count(after), // a real client: `client.clone().count(CountRequest { after })`
///         0,
///         |after, n: &u64| *after = *n,
///     );
///     let mut seen = vec![];
///     while let Some(n) = numbers.next().await {
///         seen.push(n.unwrap());
///     }
///     assert_eq!(seen, [1, 2, 3, 4, 5, 6], "each once, in order");
///     assert_eq!(numbers.resumes(), 2);
/// }
/// ```
#[allow(clippy::type_complexity)]
pub fn resume_streaming<C, Open, Fut, St, T, Adv>(
    policy: &RetryPolicy,
    mut open: Open,
    initial: C,
    advance: Adv,
) -> RetryStream<
    '_,
    C,
    impl FnMut(C) -> OpenStream<Fut>,
    Adv,
    OpenStream<Fut>,
    St,
    T,
    Status,
    StreamStatuses,
>
where
    Open: FnMut(C) -> Fut,
    Fut: Future<Output = Result<tonic::Response<St>, Status>>,
    St: Stream<Item = Result<T, Status>>,
    Adv: FnMut(&mut C, &T),
    C: Clone,
{
    policy
        .retry_stream(move |checkpoint| OpenStream {
            call: open(checkpoint),
        })
        .resume(initial, advance)
        .hooks(StreamStatuses::default())
}

pin_project_lite::pin_project! {
    /// One open of [`resume_streaming`]: the call's response, as the stream of its messages.
    #[must_use = "futures do nothing unless polled"]
    #[derive(Debug)]
    pub struct OpenStream<Fut> {
        #[pin]
        call: Fut,
    }
}

impl<Fut, St> Future for OpenStream<Fut>
where
    Fut: Future<Output = Result<tonic::Response<St>, Status>>,
{
    type Output = Result<St, Status>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project()
            .call
            .poll(cx)
            .map(|response| response.map(tonic::Response::into_inner))
    }
}

/// Which statuses end an attempt of a resumed gRPC stream and re-open it ([`Hooks`] for a
/// [`RetryStream`] of `Status`): the crate's classification by default, or a list of codes
/// (gRFC A6's `retryableStatusCodes`, yours or a layer's). Either way:
///
/// - a failure made on the client's side (a reset HTTP/2 stream, a lost connection, a stall
///   or an open cut by a timeout: a status whose sources show the transport's error, tonic's
///   timeout or the crate's [`Elapsed`]) is judged as `UNAVAILABLE`;
/// - a server's `grpc-retry-pushback-ms` is a floor under the next delay, and a negative or
///   malformed one (or a guard's rejection) is never resumed;
/// - a resume repeats a read from the checkpoint: an `UNAVAILABLE` whose outcome is unknown is
///   resumed unless you say [`idempotent(false)`](Self::idempotent) (the crate's
///   classification only: a list of codes is obeyed as written, as A6 says).
///
/// ```
/// use reattempt::Hooks;
/// use reattempt::tonic::StreamStatuses;
/// use tonic::{Code, Status};
///
/// let mut crates = StreamStatuses::default();
/// let mut listed = StreamStatuses::codes(&[Code::Unavailable, Code::Aborted]);
/// for (status, by_crate, by_list) in [
///     (Status::unavailable("draining"), true, true),
///     (Status::aborted("conflict"), false, true),
///     (Status::invalid_argument("no such field"), false, false),
/// ] {
///     assert_eq!(Hooks::<(), Status>::retry_if(&mut crates, &status), by_crate);
///     assert_eq!(Hooks::<(), Status>::retry_if(&mut listed, &status), by_list);
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct StreamStatuses {
    /// `None`: the crate's classification.
    codes: Option<Codes>,
    idempotent: bool,
}

impl Default for StreamStatuses {
    /// The crate's classification ([`transient`](crate::transient) of a `Status`).
    fn default() -> Self {
        StreamStatuses {
            codes: None,
            idempotent: true,
        }
    }
}

impl StreamStatuses {
    /// Resumes after the statuses whose code is one of `codes` (A6's `retryableStatusCodes`),
    /// a failure on the client's side counting as `UNAVAILABLE`.
    ///
    /// ```
    /// use reattempt::Hooks;
    /// use reattempt::tonic::StreamStatuses;
    /// use tonic::{Code, Status};
    ///
    /// let mut statuses = StreamStatuses::codes(&[Code::ResourceExhausted]);
    /// assert!(Hooks::<(), Status>::retry_if(&mut statuses, &Status::resource_exhausted("quota")));
    /// assert!(!Hooks::<(), Status>::retry_if(&mut statuses, &Status::unavailable("draining")));
    /// ```
    pub fn codes(codes: &[Code]) -> Self {
        StreamStatuses {
            codes: Some(Codes::new(codes)),
            ..StreamStatuses::default()
        }
    }

    /// The codes `layer` retries for the method at `path` (`"/numbers.v1.Numbers/Count"`): its
    /// retry policy's `retryableStatusCodes` (or a hedging policy's `nonFatalStatusCodes`), from
    /// the service config's entry for the method when the layer has one. A method the layer has
    /// no gRPC policy for, and a layer made
    /// [`from_policy`](GrpcRetryLayer::from_policy), get the crate's classification (the
    /// default).
    ///
    /// ```
    /// use reattempt::Hooks;
    /// use reattempt::tonic::{GrpcRetryLayer, ServiceConfig, StreamStatuses};
    /// use tonic::Status;
    ///
    /// let config = ServiceConfig::from_json(r#"{"methodConfig": [{
    ///   "name": [{ "service": "numbers.v1.Numbers" }],
    ///   "retryPolicy": { "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
    ///     "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "ABORTED"] }
    /// }]}"#)?;
    /// let layer = GrpcRetryLayer::from_service_config(config);
    /// let mut statuses = StreamStatuses::of_method(&layer, "/numbers.v1.Numbers/Count");
    /// assert!(Hooks::<(), Status>::retry_if(&mut statuses, &Status::aborted("conflict")));
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn of_method<K>(layer: &GrpcRetryLayer<K>, path: &str) -> Self {
        StreamStatuses {
            codes: layer.method_codes(path),
            ..StreamStatuses::default()
        }
    }

    /// Whether a failure whose outcome is unknown (a server's `UNAVAILABLE`, a lost
    /// connection) may re-open the stream, under the crate's classification (default `true`:
    /// a resume repeats a read from the checkpoint). A list of codes is obeyed as written.
    ///
    /// ```
    /// use reattempt::Hooks;
    /// use reattempt::tonic::StreamStatuses;
    /// use tonic::Status;
    ///
    /// let mut statuses = StreamStatuses::default().idempotent(false);
    /// assert_eq!(Hooks::<(), Status>::idempotent(&mut statuses), Some(false));
    /// ```
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }
}

impl Hooks<(), Status> for StreamStatuses {
    fn retry_if(&mut self, status: &Status) -> bool {
        if pushback(status) == Pushback::Stop {
            // The server asked for no retry (a guard's rejection carries the same `-1`).
            return false;
        }
        let on_client = made_on_client(status);
        match self.codes {
            Some(codes) => codes.contains(if on_client {
                Code::Unavailable
            } else {
                status.code()
            }),
            None => crate::transient(status) || (on_client && crate::may_repeat(Effect::Unknown)),
        }
    }

    fn retry_after(&mut self, status: &Status) -> Option<Duration> {
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

    fn idempotent(&mut self) -> Option<bool> {
        Some(self.idempotent)
    }
}

/// Whether the status was made on the client's side from a failure of the transport or a
/// timeout (a server's status crosses the wire as a code and a message, without a source).
///
/// Not an HTTP/2 reset or GOAWAY whose reason is the server's word rather than a broken stream
/// (gRPC's HTTP/2 mapping): `ENHANCE_YOUR_CALM` (`RESOURCE_EXHAUSTED`) and
/// `INADEQUATE_SECURITY` (`PERMISSION_DENIED`) are judged by their code, as the server meant.
fn made_on_client(status: &Status) -> bool {
    let Some(source) = status.source() else {
        return false;
    };
    let servers_word = chain(source).any(|error| {
        error.downcast_ref::<h2::Error>().is_some_and(|h2| {
            matches!(
                h2.reason(),
                Some(h2::Reason::ENHANCE_YOUR_CALM | h2::Reason::INADEQUATE_SECURITY)
            )
        })
    });
    !servers_word
        && chain(source).any(|error| {
            error.is::<h2::Error>()
                || error.is::<hyper::Error>()
                || error.is::<std::io::Error>()
                || error.is::<ConnectError>()
                || error.is::<TimeoutExpired>()
                || error.is::<Elapsed>()
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::FromElapsed;

    fn with_source(mut status: Status, source: impl StdError + Send + Sync + 'static) -> Status {
        status.set_source(Arc::new(source));
        status
    }

    fn retried(statuses: &mut StreamStatuses, status: &Status) -> bool {
        Hooks::<(), Status>::retry_if(statuses, status)
    }

    #[test]
    fn a_reset_stream_is_read_as_unavailable() {
        // tonic's status for an RST_STREAM(INTERNAL_ERROR) mid-stream: INTERNAL, h2's error
        // as its source.
        let reset = with_source(
            Status::internal("h2 protocol error: stream reset"),
            h2::Error::from(h2::Reason::INTERNAL_ERROR),
        );
        let served = Status::internal("bug");
        let mut crates = StreamStatuses::default();
        let mut listed = StreamStatuses::codes(&[Code::Unavailable]);
        let mut internal_only = StreamStatuses::codes(&[Code::Internal]);
        assert!(retried(&mut crates, &reset));
        assert!(retried(&mut listed, &reset));
        assert!(!retried(&mut internal_only, &reset), "read as UNAVAILABLE");
        assert!(!retried(&mut crates, &served));
        assert!(!retried(&mut listed, &served));
        assert!(retried(&mut internal_only, &served));
    }

    #[test]
    fn a_lost_connection_and_a_stall_are_unavailable() {
        let lost = with_source(
            Status::unknown("h2 protocol error: error reading a body from connection"),
            std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        );
        let stalled = Status::from_elapsed(Elapsed::new());
        let mut listed = StreamStatuses::codes(&[Code::Unavailable]);
        assert!(retried(&mut listed, &lost));
        assert!(retried(&mut listed, &stalled));
        assert!(retried(&mut StreamStatuses::default(), &stalled));
        // A server's own DEADLINE_EXCEEDED is judged by its code.
        assert!(!retried(
            &mut listed,
            &Status::deadline_exceeded("backend slow")
        ));
    }

    #[test]
    fn pushback_is_a_hint_or_a_stop() {
        let mut after = Status::unavailable("draining");
        after
            .metadata_mut()
            .insert("grpc-retry-pushback-ms", "250".parse().unwrap());
        let mut stop = Status::unavailable("overloaded");
        stop.metadata_mut()
            .insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
        for mut statuses in [
            StreamStatuses::default(),
            StreamStatuses::codes(&[Code::Unavailable]),
        ] {
            assert!(retried(&mut statuses, &after));
            assert_eq!(
                Hooks::<(), Status>::retry_after(&mut statuses, &after),
                Some(Duration::from_millis(250))
            );
            assert!(!retried(&mut statuses, &stop));
            assert_eq!(Hooks::<(), Status>::retry_after(&mut statuses, &stop), None);
        }
    }

    #[test]
    fn a_guards_rejection_is_never_resumed() {
        let open = <Status as crate::FromBreakerOpen>::from_breaker_open(crate::BreakerOpen::new());
        assert!(!retried(&mut StreamStatuses::default(), &open));
        assert!(!retried(
            &mut StreamStatuses::codes(&[Code::Unavailable]),
            &open
        ));
    }

    #[test]
    fn the_stream_is_send_when_its_call_is() {
        fn send<T: Send>(_: &T) {}
        let policy = RetryPolicy::default();
        let numbers = resume_streaming(
            &policy,
            |after: u64| async move {
                let numbers = futures_util::stream::iter([Ok::<_, Status>(after + 1)]);
                Ok(tonic::Response::new(numbers))
            },
            0,
            |after, n: &u64| *after = *n,
        );
        send(&numbers); // so that it can be consumed in a spawned task
    }

    #[test]
    fn a_layers_codes_are_its_methods() {
        let config = crate::classify::tonic::ServiceConfig::from_json(
            r#"{"methodConfig": [{"name": [{"service": "a.A"}],
                "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["ABORTED"]}}]}"#,
        )
        .unwrap();
        let layer = GrpcRetryLayer::from_service_config(config);
        let aborted = Status::aborted("conflict");
        let unavailable = Status::unavailable("draining");
        let mut named = StreamStatuses::of_method(&layer, "/a.A/M");
        assert!(retried(&mut named, &aborted));
        assert!(!retried(&mut named, &unavailable), "not listed");
        // A method the config does not name: the crate's classification.
        let mut other = StreamStatuses::of_method(&layer, "/b.B/M");
        assert!(!retried(&mut other, &aborted));
        assert!(retried(&mut other, &unavailable));
    }
}
