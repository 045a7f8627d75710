//! The runtime's own error values.

/// A per-attempt `timeout` ran out: the attempt was dropped. It counts as a failure and is retried.
///
/// A function with `timeout` needs `E: From<Elapsed>`, so that the timeout can become its error:
///
/// ```
/// use retry_runtime::Elapsed;
///
/// #[derive(Debug)]
/// enum PayError { Timeout, Declined }
/// impl From<Elapsed> for PayError {
///     fn from(_: Elapsed) -> Self { PayError::Timeout }
/// }
/// assert!(matches!(PayError::from(Elapsed::new()), PayError::Timeout));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Elapsed(());

impl Elapsed {
    /// The value a timed-out attempt produces.
    pub const fn new() -> Self {
        Elapsed(())
    }
}

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("attempt timed out")
    }
}

impl std::error::Error for Elapsed {}

/// A timed-out attempt as an I/O error of kind `TimedOut` (as tokio does for its own `Elapsed`).
impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}
