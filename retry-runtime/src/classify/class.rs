//! The class of a retryable error: what its retry costs and how long it waits. Its own module,
//! below the judgement (`effect`), which notes a judged error's class.

/// The class of a retryable error, which can set what its retry costs and how long it waits
/// (the AWS SDKs' 2026 standard mode: a throttling retry costs a budget 5 tokens and backs off
/// from 1 s, a transient one 14 tokens from 50 ms).
///
/// - [`Transient`](ErrorClass::Transient): a passing failure (a reset connection, a 500 or 503
///   during a deploy). The policy's `delay`, the budget's `retry_cost`.
/// - [`Throttling`](ErrorClass::Throttling): the server asked the client to slow down (429,
///   gRPC `RESOURCE_EXHAUSTED`, AWS's `ThrottlingException` or S3's 503 `SlowDown`). The policy's
///   `throttling_delay` if set, else `delay`; the budget's `throttling_cost` (by default its
///   `retry_cost`).
/// - [`Timeout`](ErrorClass::Timeout): the attempt waited too long for an answer (our own
///   `timeout` cut it, or its error says so). The policy's `delay`; the budget's `timeout_cost`;
///   a circuit breaker counts it as a failure even when it is not retried.
///
/// [`Transient::class`](crate::Transient::class) says which; events (`class`) and metrics (label `class`) carry it.
///
/// ```
/// use reattempt::{ErrorClass, Transient};
///
/// #[derive(Debug)]
/// enum ApiError { TooManyRequests, Unavailable }
/// impl Transient for ApiError {
///     fn is_transient(&self) -> bool { true }
///     fn class(&self) -> ErrorClass {
///         match self {
///             ApiError::TooManyRequests => ErrorClass::Throttling,
///             ApiError::Unavailable => ErrorClass::Transient,
///         }
///     }
/// }
/// assert_eq!(ApiError::TooManyRequests.class(), ErrorClass::Throttling);
/// assert_eq!(ErrorClass::Throttling.as_str(), "throttling");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ErrorClass {
    /// A passing failure.
    #[default]
    Transient,
    /// The server asked the client to slow down.
    Throttling,
    /// The attempt waited too long for an answer.
    Timeout,
}

impl ErrorClass {
    /// The class's name in events and metrics: `transient`, `throttling` or `timeout`.
    ///
    /// ```
    /// assert_eq!(reattempt::ErrorClass::Timeout.as_str(), "timeout");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Transient => "transient",
            ErrorClass::Throttling => "throttling",
            ErrorClass::Timeout => "timeout",
        }
    }
}
