//! The runtime's own error values.

/// A per-attempt `timeout` ran out: the attempt was dropped. It counts as a failure and is retried.
///
/// A function with `timeout` needs `E: From<Elapsed>`, so that the timeout can become its error:
///
/// ```
/// use reattempt::Elapsed;
///
/// #[derive(Debug)]
/// enum PayError { Timeout, Declined }
/// impl From<Elapsed> for PayError {
///     fn from(_: Elapsed) -> Self { PayError::Timeout }
/// }
/// assert!(matches!(PayError::from(Elapsed::new()), PayError::Timeout));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Elapsed {
    injected: bool,
}

impl Elapsed {
    /// The value a timed-out attempt produces.
    pub const fn new() -> Self {
        Elapsed { injected: false }
    }

    /// The value of an attempt that fault injection failed (feature `testing`: see
    /// [`FaultInjection`](crate::testing::FaultInjection)): not made, converted into the call's
    /// error as a timeout is, so that it is retried as a timeout-class failure.
    ///
    /// ```
    /// use reattempt::Elapsed;
    /// assert!(Elapsed::injected().is_injected());
    /// assert_eq!(Elapsed::injected().to_string(), "injected fault: attempt not made");
    /// ```
    #[cfg(feature = "testing")]
    pub const fn injected() -> Self {
        Elapsed { injected: true }
    }

    /// Whether fault injection made this failure (the attempt was not made), rather than a
    /// `timeout` that ran out. Always `false` without feature `testing`.
    ///
    /// ```
    /// assert!(!reattempt::Elapsed::new().is_injected());
    /// ```
    pub const fn is_injected(&self) -> bool {
        self.injected
    }
}

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.injected {
            "injected fault: attempt not made"
        } else {
            "attempt timed out"
        })
    }
}

impl std::error::Error for Elapsed {}

/// A timed-out attempt as an I/O error of kind `TimedOut` (as tokio does for its own `Elapsed`).
impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// A call rejected by an open circuit breaker: the attempt was not made. Never retried.
///
/// A function with `circuit_breaker` needs `E: From<BreakerOpen>`:
///
/// ```
/// use reattempt::BreakerOpen;
///
/// #[derive(Debug)]
/// enum PayError { Unavailable, CircuitOpen }
/// impl From<BreakerOpen> for PayError {
///     fn from(_: BreakerOpen) -> Self { PayError::CircuitOpen }
/// }
/// assert!(matches!(PayError::from(BreakerOpen::new()), PayError::CircuitOpen));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BreakerOpen(());

impl BreakerOpen {
    /// The value a rejected call produces.
    pub const fn new() -> Self {
        BreakerOpen(())
    }
}

impl std::fmt::Display for BreakerOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("circuit breaker is open")
    }
}

impl std::error::Error for BreakerOpen {}

/// A rejection as an I/O error of kind `Other` (nothing was sent, so no network kind fits).
impl From<BreakerOpen> for std::io::Error {
    fn from(e: BreakerOpen) -> Self {
        std::io::Error::other(e)
    }
}

/// An attempt the adaptive throttle rejected locally: it was not sent. Never retried.
///
/// A function with `throttle` needs `E: From<Throttled>`:
///
/// ```
/// use reattempt::Throttled;
///
/// #[derive(Debug)]
/// enum PayError { Unavailable, Shed }
/// impl From<Throttled> for PayError {
///     fn from(_: Throttled) -> Self { PayError::Shed }
/// }
/// assert!(matches!(PayError::from(Throttled::new()), PayError::Shed));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Throttled(());

impl Throttled {
    /// The value a throttled attempt produces.
    pub const fn new() -> Self {
        Throttled(())
    }
}

impl std::fmt::Display for Throttled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rejected by the adaptive throttle")
    }
}

impl std::error::Error for Throttled {}

/// A throttled attempt as an I/O error of kind `Other` (nothing was sent).
impl From<Throttled> for std::io::Error {
    fn from(e: Throttled) -> Self {
        std::io::Error::other(e)
    }
}

/// A call the bulkhead turned away: every slot was taken (for `max_wait`, if it has one), so no
/// attempt was made. Never retried.
///
/// A function with `bulkhead` needs `E: From<BulkheadFull>`:
///
/// ```
/// use reattempt::BulkheadFull;
///
/// #[derive(Debug)]
/// enum PayError { Unavailable, Busy }
/// impl From<BulkheadFull> for PayError {
///     fn from(_: BulkheadFull) -> Self { PayError::Busy }
/// }
/// assert!(matches!(PayError::from(BulkheadFull::new()), PayError::Busy));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BulkheadFull(());

impl BulkheadFull {
    /// The value a call turned away produces.
    pub const fn new() -> Self {
        BulkheadFull(())
    }
}

impl std::fmt::Display for BulkheadFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bulkhead full")
    }
}

impl std::error::Error for BulkheadFull {}

/// A call turned away as an I/O error of kind `Other` (nothing was sent).
impl From<BulkheadFull> for std::io::Error {
    fn from(e: BulkheadFull) -> Self {
        std::io::Error::other(e)
    }
}

/// A breaker or budget setting that breaks a rule; [`field`](ConfigError::field) names it.
///
/// ```
/// let err = reattempt::RetryBudget::builder().retry_cost(0).build().unwrap_err();
/// assert_eq!(err.field(), "retry_cost");
/// assert_eq!(err.to_string(), "invalid `retry_cost`: must be at least 1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A count or duration that must be positive was zero.
    Zero {
        /// The setting.
        field: &'static str,
    },
    /// A value outside its range.
    OutOfRange {
        /// The setting.
        field: &'static str,
        /// The range it must lie in.
        rule: &'static str,
    },
    /// Two settings that exclude each other.
    Conflict {
        /// The setting.
        field: &'static str,
        /// The one it excludes.
        other: &'static str,
    },
    /// A setting that only applies with another.
    Requires {
        /// The setting.
        field: &'static str,
        /// The one it needs.
        other: &'static str,
    },
    /// A retry budget whose bucket could never pay for one retry: `cost` exceeds `max_tokens`.
    Unpayable {
        /// The setting (a cost, or `max_tokens`).
        field: &'static str,
        /// The cost of one retry (`retry_cost` or `timeout_cost`).
        cost: u32,
        /// The bucket's size.
        max_tokens: u32,
    },
}

impl ConfigError {
    /// The setting at fault, as spelled in the builder and in config files.
    pub const fn field(&self) -> &'static str {
        match self {
            ConfigError::Zero { field }
            | ConfigError::OutOfRange { field, .. }
            | ConfigError::Conflict { field, .. }
            | ConfigError::Requires { field, .. }
            | ConfigError::Unpayable { field, .. } => field,
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid `{}`: ", self.field())?;
        match self {
            ConfigError::Zero { .. } => f.write_str("must be at least 1"),
            ConfigError::OutOfRange { rule, .. } => write!(f, "must be {rule}"),
            ConfigError::Conflict { other, .. } => write!(f, "cannot be combined with `{other}`"),
            ConfigError::Requires { other, .. } => write!(f, "only applies with `{other}`"),
            ConfigError::Unpayable { field, cost, .. } if *field == "max_tokens" => write!(
                f,
                "must be at least one retry's cost ({cost}): the bucket could never pay for a retry"
            ),
            ConfigError::Unpayable {
                cost, max_tokens, ..
            } => write!(
                f,
                "{cost} tokens exceed `max_tokens` ({max_tokens}): the bucket could never pay for a retry"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
