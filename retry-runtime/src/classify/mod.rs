//! Which errors are worth retrying, and of which class a retryable error is.

// What a response or an error means for retrying, per protocol and client: HTTP statuses and
// `Retry-After` (`http`, with every server hint in `hints`), gRPC statuses (`tonic`), database
// errors (`sqlx`). The client stacks that act on these verdicts are in `crate::clients`.
mod class;
pub(crate) mod effect;
#[cfg(feature = "http")]
pub(crate) mod hints;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "sqlx")]
mod sqlx;
#[cfg(feature = "tonic")]
pub mod tonic;

pub use self::class::ErrorClass;
pub use self::effect::{Effect, may_repeat};
use crate::error::Elapsed;

/// The error codes the AWS SDKs treat as throttling (the SDKs' retry specification, as in
/// aws-sdk-go-v2's `retry.DefaultThrottleErrorCodes` and aws-sdk-java-v2's `THROTTLING_ERROR_CODES`).
const AWS_THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];

impl ErrorClass {
    /// The class of an AWS error by its code (`err.code()` of an AWS SDK error): throttling for
    /// the codes the SDKs treat as throttling (`ThrottlingException`, S3's `SlowDown`,
    /// `DynamoDB`'s `ProvisionedThroughputExceededException`, …), else transient. For a
    /// `Transient` impl of an error that wraps an SDK error:
    /// `fn class(&self) -> ErrorClass { ErrorClass::of_aws_code(self.code()) }`.
    ///
    /// ```
    /// use reattempt::ErrorClass;
    /// assert_eq!(ErrorClass::of_aws_code("SlowDown"), ErrorClass::Throttling);
    /// assert_eq!(ErrorClass::of_aws_code("InternalError"), ErrorClass::Transient);
    /// ```
    pub fn of_aws_code(code: &str) -> ErrorClass {
        if AWS_THROTTLING_CODES.contains(&code) {
            ErrorClass::Throttling
        } else {
            ErrorClass::Transient
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors that know whether they are transient: likely to succeed if tried again.
///
/// Use it with `retry_if = reattempt::transient`, or with the closure API's `.retry_if(transient)`.
///
/// ```
/// use reattempt::{Transient, transient};
///
/// #[derive(Debug)]
/// enum PayError { Unavailable, Declined }
/// impl Transient for PayError {
///     fn is_transient(&self) -> bool { matches!(self, PayError::Unavailable) }
/// }
/// assert!(transient(&PayError::Unavailable));
/// assert!(!transient(&PayError::Declined));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say which of its values are transient",
    label = "`{Self}` does not implement `reattempt::Transient`",
    note = "for a type of your own: implement `reattempt::Transient` for `{Self}`, or list the retryable errors with `retry_on = [..]`",
    note = "for `tonic::Status`, `sqlx::Error` or `reqwest::Error`: enable reattempt's feature `tonic`, `sqlx` or `reqwest`; for another crate's type: `retry_if = |e| …` with its own methods"
)]
pub trait Transient {
    /// `true` when trying again may succeed.
    fn is_transient(&self) -> bool;

    /// `true` when the error is a timeout (the attempt waited too long for an answer), so that a
    /// retry after it costs a [`RetryBudget`](crate::RetryBudget)'s `timeout_cost`, as the AWS
    /// SDKs charge. Default: `false`. [`Elapsed`], an I/O error of kind `TimedOut`, (feature
    /// `reqwest`) a `reqwest::Error` whose `is_timeout()` is true, (feature `tonic`) a
    /// `tonic::Status` of `DEADLINE_EXCEEDED` or from tonic's own deadline, and (feature `sqlx`)
    /// an `sqlx::Error` of a pool timeout or MySQL's lock wait timeout are timeouts.
    ///
    /// ```
    /// use reattempt::Transient;
    ///
    /// #[derive(Debug)]
    /// enum PayError { ReadTimeout, Unavailable }
    /// impl Transient for PayError {
    ///     fn is_transient(&self) -> bool { true }
    ///     fn is_timeout(&self) -> bool { matches!(self, PayError::ReadTimeout) }
    /// }
    /// assert!(PayError::ReadTimeout.is_timeout());
    /// assert!(!PayError::Unavailable.is_timeout());
    /// ```
    fn is_timeout(&self) -> bool {
        false
    }

    /// The class of this error when it is retried ([`ErrorClass`]). Default: a timeout when
    /// [`is_timeout`](Transient::is_timeout) says so, else transient, so an impl that predates
    /// the classes keeps its behaviour. Throttling: `http::StatusCode` 429, (feature `reqwest`)
    /// a `reqwest::Error` of status 429, (feature `tonic`) a `tonic::Status` of
    /// `RESOURCE_EXHAUSTED`.
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use reattempt::{ErrorClass, Transient};
    ///
    /// assert_eq!(Error::from(ErrorKind::TimedOut).class(), ErrorClass::Timeout);
    /// assert_eq!(Error::from(ErrorKind::ConnectionReset).class(), ErrorClass::Transient);
    /// ```
    ///
    /// # Which drivers honour it, and when
    ///
    /// The class decides the retry's delay (a policy's `throttling_delay`) and its cost (a
    /// budget's `throttling_cost`, `timeout_cost`). One rule, in every driver: **a retried
    /// error's class is its own type's** ([`Transient::class`] of the error judged), wherever the
    /// driver can know it, and the same where it cannot:
    ///
    /// | driver | knows the error's own class |
    /// |---|---|
    /// | `#[retryable]` | whenever the error type implements `Transient` (the attribute sees the concrete type), whatever its keys and its `retry_if`; for a type that does not, as the closure API |
    /// | the closure API (`policy.retry(..)`), the tower `RetryLayer` | when its `retry_if` asked the crate about the error itself: [`transient`] (`.retry_if(reattempt::transient)`), the `Transient` impls the crate ships (`.retry_if(\|e\| e.is_transient())` on an `io::Error`, `StatusCode`, `reqwest::Error`, `tonic::Status`, `sqlx::Error`), `reattempt::tonic::codes`; for a retried `Ok`, what `retry_if_ok` asked (`\|r\| r.status().is_transient()`: a 429 is throttling) |
    /// | the tower layer's `.http()`, the reqwest middleware | a response's status, always (a 429 is throttling); the middleware's errors, always |
    /// | the gRPC layer | a `Status`'s, always (`RESOURCE_EXHAUSTED` is throttling) |
    ///
    /// A class belongs to the type it is noted for: when a predicate asks the crate about an
    /// error's inner cause (`retry_if = |e: &Wrapped| transient(&e.0)`, or a wrapper's
    /// `is_transient` that asks the `StatusCode` it holds), the inner class (a 429's throttling)
    /// is not the outer error's, in any driver: the outer error's class is what its own type
    /// says (its `class`, default transient), or transient if it does not implement `Transient`.
    /// To give a wrapper its cause's class, say so in its impl
    /// (`fn class(&self) -> ErrorClass { self.0.class() }`).
    ///
    /// Where nothing is known, every retry is transient: a `retry_if` that does not ask the crate
    /// about the error (a rule you wrote, `|e| e.code == 429`, or your own type's
    /// `is_transient`), or no `retry_if` at all, in the closure API and the tower layer (they put
    /// no bound on the error type, and stable Rust has no specialization to ask `Transient` of a
    /// type that may not implement it). Write `.retry_if(reattempt::transient)`, or say it with
    /// [`.error_class(reattempt::error_class)`](crate::Retry::error_class). A class stated
    /// (`error_class`, `timeout_if` for the errors it names, a [`Hooks`](crate::Hooks) impl's
    /// own `class`, `#[retryable]`'s for a `Transient` type) wins over a class noted.
    ///
    /// How: while the engine judges an error of type `E`, [`transient`] (and the rest above)
    /// notes the class of the value it is asked about, kept only when that value is an `E` (or
    /// an `&E`; the type's identity without lifetimes); the engine asks the hooks' `class` right
    /// after `retry_if`, in the same judgement, and hooks that state none take the class kept.
    /// The note is the judged error's alone: the judgement ends before anything is awaited, so it
    /// never reaches the next attempt, another call or another task. Nothing of it runs on an
    /// attempt that succeeds.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{ErrorClass, Jitter, Preset, Transient};
    ///     use tokio::time::Instant;
    ///
    ///     #[derive(Debug)]
    ///     struct SlowDown;
    ///     impl Transient for SlowDown {
    ///         fn is_transient(&self) -> bool { true }
    ///         fn class(&self) -> ErrorClass { ErrorClass::Throttling }
    ///     }
    ///
    ///     let policy = Preset::Aws2026.policy().max_attempts(2).jitter(Jitter::None).build().unwrap();
    ///     let budget = Preset::Aws2026.budget().build().unwrap();
    ///     let start = Instant::now();
    ///     let out = policy
    ///         .retry(|| async { Err::<(), _>(SlowDown) })
    ///         .retry_if(reattempt::transient) // nothing else: the class comes with it
    ///         .without_timeout()
    ///         .budget(&budget)
    ///         .await;
    ///     assert!(out.is_err());
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1), "throttling: from 1 s, not 50 ms");
    ///     assert_eq!(budget.available(), 500 - 5, "throttling: 5 tokens, not 14");
    /// }
    /// ```
    fn class(&self) -> ErrorClass {
        if self.is_timeout() {
            ErrorClass::Timeout
        } else {
            ErrorClass::Transient
        }
    }

    /// What the failed attempt may have done ([`Effect`]): nothing (`NotDone`: never sent,
    /// refused, rolled back), or something (`Unknown`: a reset after the request was written, a
    /// timeout after sending, a 500). Default: [`Effect::Unstated`], for a type that does not
    /// say: its [`is_transient`](Transient::is_transient) is then taken as written.
    ///
    /// The crate's own judgement ([`transient`], and the `Transient` impls it ships) retries an
    /// `Unknown` effect only on a call that is idempotent: see [`Effect`]. To follow the same rule
    /// in an impl of your own, end `is_transient` with [`may_repeat`]`(self.effect())`.
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use reattempt::{Effect, Transient};
    ///
    /// assert_eq!(Error::from(ErrorKind::ConnectionRefused).effect(), Effect::NotDone);
    /// assert_eq!(Error::from(ErrorKind::UnexpectedEof).effect(), Effect::Unknown);
    /// ```
    fn effect(&self) -> Effect {
        Effect::Unstated
    }
}

/// I/O errors of a remote call: the connection's failures are transient, everything else (not
/// found, permission denied, invalid data, …) is not. What each says of the attempt
/// ([`Effect`]):
///
/// | kind | transient | effect |
/// |---|---|---|
/// | `ConnectionRefused`, `HostUnreachable`, `NetworkUnreachable`, `NetworkDown`, `AddrNotAvailable` (never connected) | yes | not done |
/// | `Interrupted`, `WouldBlock` (the call did not happen: retry it) | yes | not done |
/// | `ConnectionReset`, `ConnectionAborted`, `BrokenPipe`, `UnexpectedEof`, `NotConnected` (the connection broke: what was written may have been acted on) | yes, on an idempotent call | unknown |
/// | `TimedOut` (no answer in time: the request may have been read) | yes, on an idempotent call | unknown |
/// | any other kind | no | unstated |
///
/// A reset, a broken pipe and an EOF mean the same thing to a caller (the peer went away: a
/// crash, a restart, a proxy's idle timeout), so they are classified alike.
///
/// ```
/// use std::io::{Error, ErrorKind};
/// use reattempt::{Effect, Transient};
///
/// assert!(Error::from(ErrorKind::ConnectionReset).is_transient());
/// assert_eq!(Error::from(ErrorKind::ConnectionReset).effect(), Effect::Unknown);
/// assert!(!Error::from(ErrorKind::PermissionDenied).is_transient());
/// ```
impl Transient for std::io::Error {
    fn is_transient(&self) -> bool {
        effect::noting_class(
            self,
            || self.class(),
            effect::transient_by_effect(self.effect()),
        )
    }

    fn is_timeout(&self) -> bool {
        self.kind() == std::io::ErrorKind::TimedOut
    }

    fn effect(&self) -> Effect {
        use std::io::ErrorKind::{
            AddrNotAvailable, BrokenPipe, ConnectionAborted, ConnectionRefused, ConnectionReset,
            HostUnreachable, Interrupted, NetworkDown, NetworkUnreachable, NotConnected, TimedOut,
            UnexpectedEof, WouldBlock,
        };
        match self.kind() {
            ConnectionRefused | HostUnreachable | NetworkUnreachable | NetworkDown
            | AddrNotAvailable | Interrupted | WouldBlock => Effect::NotDone,
            ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | NotConnected
            | TimedOut => Effect::Unknown,
            _ => Effect::Unstated,
        }
    }
}

/// A timed-out attempt is transient, with an unknown effect: retried by the crate's judgement
/// on an idempotent call only (see [`Effect`]).
///
/// ```
/// use reattempt::{Effect, Elapsed, Transient};
/// assert!(Elapsed::new().is_transient());
/// assert_eq!(Elapsed::new().effect(), Effect::Unknown);
/// ```
impl Transient for Elapsed {
    fn is_transient(&self) -> bool {
        effect::noting_class(self, || ErrorClass::Timeout, may_repeat(Effect::Unknown))
    }

    /// An attempt cut by a timeout may have acted (the request may have been sent):
    /// [`Effect::Unknown`].
    fn effect(&self) -> Effect {
        Effect::Unknown
    }

    fn is_timeout(&self) -> bool {
        true
    }
}

impl<T: Transient + ?Sized> Transient for &T {
    fn is_transient(&self) -> bool {
        (**self).is_transient()
    }

    fn is_timeout(&self) -> bool {
        (**self).is_timeout()
    }

    fn class(&self) -> ErrorClass {
        (**self).class()
    }

    fn effect(&self) -> Effect {
        (**self).effect()
    }
}

impl<T: Transient + ?Sized> Transient for Box<T> {
    fn is_transient(&self) -> bool {
        (**self).is_transient()
    }

    fn is_timeout(&self) -> bool {
        (**self).is_timeout()
    }

    fn class(&self) -> ErrorClass {
        (**self).class()
    }

    fn effect(&self) -> Effect {
        (**self).effect()
    }
}

/// The predicate form of [`Transient`], for `retry_if = reattempt::transient` and
/// `.retry_if(transient)`: the crate's judgement. An error is retried when it
/// [`is_transient`](Transient::is_transient) and, if its [`effect`](Transient::effect) is
/// unknown (the attempt may have acted), only on a call that is idempotent (see [`Effect`]):
/// a reset `UPDATE … SET v = v + 1` is not run twice unless the call says it may be. Inside a
/// retrying call it also tells the call the error's [`class`](Transient::class), in every
/// driver (see [which drivers honour it](Transient#which-drivers-honour-it-and-when)).
///
/// Outside a retrying call nothing is refused for the effect:
///
/// ```
/// use std::io::{Error, ErrorKind};
/// assert!(reattempt::transient(&Error::from(ErrorKind::TimedOut)));
/// ```
pub fn transient<E: Transient + ?Sized>(error: &E) -> bool {
    let retry = error.is_transient() && may_repeat(error.effect());
    // Inside a retrying call's judgement, the error's class too, for hooks that state none;
    // noted last, so that a wrapper's own class wins over any its `is_transient` asked.
    effect::note_class(error, || error.class());
    retry
}

/// The function form of [`Transient::class`]: for the closure API's
/// [`error_class`](crate::Retry::error_class) and the tower layer's, where the retry predicate
/// does not tell the class itself (see
/// [which drivers honour it](Transient#which-drivers-honour-it-and-when)).
///
/// ```
/// use std::io::{Error, ErrorKind};
/// use reattempt::{ErrorClass, error_class};
/// assert_eq!(error_class(&Error::from(ErrorKind::TimedOut)), ErrorClass::Timeout);
/// ```
pub fn error_class<E: Transient + ?Sized>(error: &E) -> ErrorClass {
    error.class()
}

/// The predicate form of [`Transient::is_timeout`]: for the closure API's
/// [`timeout_if`](crate::Retry::timeout_if) (needed only where the class is not known without
/// it: see [which drivers honour it](Transient#which-drivers-honour-it-and-when)).
///
/// ```
/// use std::io::{Error, ErrorKind};
/// assert!(reattempt::is_timeout(&Error::from(ErrorKind::TimedOut)));
/// assert!(!reattempt::is_timeout(&Error::from(ErrorKind::ConnectionReset)));
/// ```
pub fn is_timeout<E: Transient + ?Sized>(error: &E) -> bool {
    error.is_timeout()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn io_kinds() {
        for kind in [
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionRefused,
            ErrorKind::ConnectionAborted,
            ErrorKind::TimedOut,
            ErrorKind::Interrupted,
            ErrorKind::WouldBlock,
        ] {
            assert!(transient(&Error::from(kind)), "{kind:?}");
        }
        for kind in [
            ErrorKind::NotFound,
            ErrorKind::PermissionDenied,
            ErrorKind::InvalidInput,
            ErrorKind::InvalidData,
            ErrorKind::Unsupported,
        ] {
            assert!(!transient(&Error::from(kind)), "{kind:?}");
        }
        let timed_out: Error = Elapsed::new().into();
        assert!(transient(&timed_out));
        assert!(transient(&Box::new(Elapsed::new())));
    }
}
