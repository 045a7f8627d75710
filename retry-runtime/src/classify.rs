//! Which errors are worth retrying.

use crate::error::Elapsed;

/// Errors that know whether they are transient: likely to succeed if tried again.
///
/// Use it with `retry_if = reattempt::transient`, or with the closure API's `.when(transient)`.
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
    note = "implement `reattempt::Transient` for `{Self}`, or list the retryable errors with `retry_on = [..]`"
)]
pub trait Transient {
    /// `true` when trying again may succeed.
    fn is_transient(&self) -> bool;
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
}

impl<T: Transient + ?Sized> Transient for &T {
    fn is_transient(&self) -> bool {
        (**self).is_transient()
    }
}

impl<T: Transient + ?Sized> Transient for Box<T> {
    fn is_transient(&self) -> bool {
        (**self).is_transient()
    }
}

/// The predicate form of [`Transient`], for `retry_if = reattempt::transient` and `.when(transient)`.
///
/// ```
/// use std::io::{Error, ErrorKind};
/// assert!(retry_runtime::transient(&Error::from(ErrorKind::TimedOut)));
/// ```
pub fn transient<E: Transient + ?Sized>(error: &E) -> bool {
    error.is_transient()
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
