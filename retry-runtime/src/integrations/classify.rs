//! Which errors are worth retrying.

use crate::error::Elapsed;

/// Errors that know whether they are transient: likely to succeed if tried again.
///
/// Use it with `retry_if = reattempt::transient`, or with the closure API's `.retry_if(transient)`.
///
/// ```
/// use retry_runtime::{Transient, transient};
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
    /// use retry_runtime::Transient;
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
}

/// Connection reset, refused or aborted, timed out, interrupted and would-block errors are
/// transient; everything else (not found, permission denied, invalid data, …) is not.
///
/// ```
/// use std::io::{Error, ErrorKind};
/// use retry_runtime::Transient;
///
/// assert!(Error::from(ErrorKind::ConnectionReset).is_transient());
/// assert!(!Error::from(ErrorKind::PermissionDenied).is_transient());
/// ```
impl Transient for std::io::Error {
    fn is_transient(&self) -> bool {
        use std::io::ErrorKind::{
            ConnectionAborted, ConnectionRefused, ConnectionReset, Interrupted, TimedOut,
            WouldBlock,
        };
        matches!(
            self.kind(),
            ConnectionReset
                | ConnectionRefused
                | ConnectionAborted
                | TimedOut
                | Interrupted
                | WouldBlock
        )
    }

    fn is_timeout(&self) -> bool {
        self.kind() == std::io::ErrorKind::TimedOut
    }
}

/// A timed-out attempt is transient.
///
/// ```
/// use retry_runtime::{Elapsed, Transient};
/// assert!(Elapsed::new().is_transient());
/// ```
impl Transient for Elapsed {
    fn is_transient(&self) -> bool {
        true
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
}

impl<T: Transient + ?Sized> Transient for Box<T> {
    fn is_transient(&self) -> bool {
        (**self).is_transient()
    }

    fn is_timeout(&self) -> bool {
        (**self).is_timeout()
    }
}

/// The predicate form of [`Transient`], for `retry_if = reattempt::transient` and `.retry_if(transient)`.
///
/// ```
/// use std::io::{Error, ErrorKind};
/// assert!(retry_runtime::transient(&Error::from(ErrorKind::TimedOut)));
/// ```
pub fn transient<E: Transient + ?Sized>(error: &E) -> bool {
    error.is_transient()
}

/// The predicate form of [`Transient::is_timeout`]: for the closure API's
/// [`timeout_if`](crate::Retry::timeout_if) (the attribute asks `Transient` by itself).
///
/// ```
/// use std::io::{Error, ErrorKind};
/// assert!(retry_runtime::is_timeout(&Error::from(ErrorKind::TimedOut)));
/// assert!(!retry_runtime::is_timeout(&Error::from(ErrorKind::ConnectionReset)));
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
