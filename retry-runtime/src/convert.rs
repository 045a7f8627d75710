//! How the runtime's own failures become the user's error: a per-attempt timeout ([`Elapsed`]),
//! a rejection by an open breaker ([`BreakerOpen`]), by the adaptive throttle ([`Throttled`]) or
//! by a full bulkhead ([`BulkheadFull`]).
//!
//! Each has a trait ([`FromElapsed`], [`FromBreakerOpen`], [`FromThrottled`],
//! [`FromBulkheadFull`]), which a key or a closure-API setting that can produce that failure
//! requires of the error type, unless the conversion is given where the call is written
//! (`timeout_into`, `breaker_open_into`, `throttled_into`, `bulkhead_full_into`: the same names
//! in the attribute, the closure API and the tower layer). Each trait is implemented
//!
//! - for every type with the matching `From` impl: the way for an error type of your own;
//! - for `String` (the failure's text) and, through their `From` impls, `std::io::Error`,
//!   `Box<dyn Error + Send + Sync>` and `anyhow::Error`;
//! - behind the `tonic`, `sqlx` and `reqwest` features, for `tonic::Status`, `sqlx::Error` and
//!   `reqwest::Error`, types no user can give a `From` impl (the orphan rule).
//!
//! Another crate's type without a default (a `redis::RedisError`, say) takes the `…_into` key.

use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};

/// Errors that a timed-out attempt can turn into: the bound `timeout` puts on a function's error
/// type, unless `timeout_into` says how. Implemented for every `E: From<Elapsed>`, for `String`,
/// and (features `tonic`, `sqlx`, `reqwest`) for those crates' errors.
///
/// ```
/// use reattempt::{Elapsed, FromElapsed};
///
/// #[derive(Debug, PartialEq)]
/// enum PayError { Timeout, Declined }
/// impl From<Elapsed> for PayError {
///     fn from(_: Elapsed) -> Self { PayError::Timeout }
/// }
/// assert_eq!(PayError::from_elapsed(Elapsed::new()), PayError::Timeout);
/// assert_eq!(String::from_elapsed(Elapsed::new()), "attempt timed out");
/// assert_eq!(std::io::Error::from_elapsed(Elapsed::new()).kind(), std::io::ErrorKind::TimedOut);
/// ```
#[diagnostic::on_unimplemented(
    message = "`timeout` cannot turn a timed-out attempt into `{Self}`",
    label = "a timed-out attempt must become `{Self}`",
    note = "for an error type of your own: add a timeout variant and `impl From<reattempt::Elapsed> for {Self}`",
    note = "for another crate's type: say how with `timeout_into = |elapsed| …` (the closure API's and the tower layer's `.timeout_into(..)`); the features `tonic`, `sqlx` and `reqwest` convert their crates' errors already"
)]
pub trait FromElapsed: Sized {
    /// The error of an attempt that ran out of time.
    fn from_elapsed(elapsed: Elapsed) -> Self;
}

#[diagnostic::do_not_recommend]
impl<E: From<Elapsed>> FromElapsed for E {
    #[inline]
    fn from_elapsed(elapsed: Elapsed) -> Self {
        E::from(elapsed)
    }
}

/// Errors that a call rejected by an open breaker can turn into: the bound `circuit_breaker`
/// puts on a function's error type, unless `breaker_open_into` says how. Implemented for every
/// `E: From<BreakerOpen>`, for `String`, and (features `tonic`, `sqlx`, `reqwest`) for those
/// crates' errors.
///
/// ```
/// use reattempt::{BreakerOpen, FromBreakerOpen};
///
/// #[derive(Debug, PartialEq)]
/// enum ApiError { Rejected }
/// impl From<BreakerOpen> for ApiError {
///     fn from(_: BreakerOpen) -> Self { ApiError::Rejected }
/// }
/// assert_eq!(ApiError::from_breaker_open(BreakerOpen::new()), ApiError::Rejected);
/// assert_eq!(String::from_breaker_open(BreakerOpen::new()), "circuit breaker is open");
/// ```
#[diagnostic::on_unimplemented(
    message = "`circuit_breaker` cannot turn a rejected call into `{Self}`",
    label = "a call the open breaker rejects must become `{Self}`",
    note = "for an error type of your own: add a variant and `impl From<reattempt::BreakerOpen> for {Self}`",
    note = "for another crate's type: say how with `breaker_open_into = |open| …` (in the closure API, `.breaker_open_into(..)` before `.circuit_breaker(..)`; in the tower layer, after); the features `tonic`, `sqlx` and `reqwest` convert their crates' errors already"
)]
pub trait FromBreakerOpen: Sized {
    /// The error of a call the breaker rejected.
    fn from_breaker_open(open: BreakerOpen) -> Self;
}

#[diagnostic::do_not_recommend]
impl<E: From<BreakerOpen>> FromBreakerOpen for E {
    #[inline]
    fn from_breaker_open(open: BreakerOpen) -> Self {
        E::from(open)
    }
}

/// Errors that an attempt shed by the adaptive throttle can turn into: the bound `throttle` puts
/// on a function's error type, unless `throttled_into` says how. Implemented for every
/// `E: From<Throttled>`, for `String`, and (features `tonic`, `sqlx`, `reqwest`) for those
/// crates' errors.
///
/// ```
/// use reattempt::{FromThrottled, Throttled};
///
/// assert_eq!(String::from_throttled(Throttled::new()), "rejected by the adaptive throttle");
/// ```
#[diagnostic::on_unimplemented(
    message = "`throttle` cannot turn a shed attempt into `{Self}`",
    label = "an attempt the adaptive throttle sheds must become `{Self}`",
    note = "for an error type of your own: add a variant and `impl From<reattempt::Throttled> for {Self}`",
    note = "for another crate's type: say how with `throttled_into = |shed| …` (in the closure API, `.throttled_into(..)` before `.throttle(..)`; in the tower layer, after); the features `tonic`, `sqlx` and `reqwest` convert their crates' errors already"
)]
pub trait FromThrottled: Sized {
    /// The error of an attempt the throttle shed.
    fn from_throttled(shed: Throttled) -> Self;
}

#[diagnostic::do_not_recommend]
impl<E: From<Throttled>> FromThrottled for E {
    #[inline]
    fn from_throttled(shed: Throttled) -> Self {
        E::from(shed)
    }
}

/// Errors that a call turned away by a full bulkhead can turn into: the bound `bulkhead` puts on
/// a function's error type, unless `bulkhead_full_into` says how. Implemented for every
/// `E: From<BulkheadFull>`, for `String`, and (features `tonic`, `sqlx`, `reqwest`) for those
/// crates' errors.
///
/// ```
/// use reattempt::{BulkheadFull, FromBulkheadFull};
///
/// assert_eq!(String::from_bulkhead_full(BulkheadFull::new()), "bulkhead full");
/// ```
#[diagnostic::on_unimplemented(
    message = "`bulkhead` cannot turn a call it turned away into `{Self}`",
    label = "a call the full bulkhead turns away must become `{Self}`",
    note = "for an error type of your own: add a variant and `impl From<reattempt::BulkheadFull> for {Self}`",
    note = "for another crate's type: say how with `bulkhead_full_into = |full| …` (in the closure API, `.bulkhead_full_into(..)` before `.bulkhead(..)`; in the tower layer, after); the features `tonic`, `sqlx` and `reqwest` convert their crates' errors already"
)]
pub trait FromBulkheadFull: Sized {
    /// The error of a call the bulkhead turned away.
    fn from_bulkhead_full(full: BulkheadFull) -> Self;
}

#[diagnostic::do_not_recommend]
impl<E: From<BulkheadFull>> FromBulkheadFull for E {
    #[inline]
    fn from_bulkhead_full(full: BulkheadFull) -> Self {
        E::from(full)
    }
}

/// A `String` error gets the failure's text (its `Display`).
impl FromElapsed for String {
    fn from_elapsed(elapsed: Elapsed) -> Self {
        elapsed.to_string()
    }
}

/// A `String` error gets the failure's text (its `Display`).
impl FromBreakerOpen for String {
    fn from_breaker_open(open: BreakerOpen) -> Self {
        open.to_string()
    }
}

/// A `String` error gets the failure's text (its `Display`).
impl FromThrottled for String {
    fn from_throttled(shed: Throttled) -> Self {
        shed.to_string()
    }
}

/// A `String` error gets the failure's text (its `Display`).
impl FromBulkheadFull for String {
    fn from_bulkhead_full(full: BulkheadFull) -> Self {
        full.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout_of<E: FromElapsed>() -> E {
        E::from_elapsed(Elapsed::new())
    }

    #[test]
    fn the_from_impls_and_the_defaults_convert() {
        let boxed: Box<dyn std::error::Error + Send + Sync> = timeout_of();
        assert_eq!(boxed.to_string(), "attempt timed out");
        assert_eq!(timeout_of::<String>(), "attempt timed out");
        let io: std::io::Error =
            <std::io::Error as FromBreakerOpen>::from_breaker_open(BreakerOpen::new());
        assert_eq!(io.to_string(), "circuit breaker is open");
        assert_eq!(
            <std::io::Error as FromBulkheadFull>::from_bulkhead_full(BulkheadFull::new())
                .to_string(),
            "bulkhead full"
        );
        assert_eq!(
            <std::io::Error as FromThrottled>::from_throttled(Throttled::new()).to_string(),
            "rejected by the adaptive throttle"
        );
    }
}
