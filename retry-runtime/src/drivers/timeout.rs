//! How a timed-out attempt becomes the call's error type: the conversion every driver that
//! times its attempts is given.
//!
//! Below the drivers that take one (the closure API, the hedged loop, the tower layer), so that
//! they share it without naming one another.

use crate::convert::FromElapsed;
// Only for the links of the docs below, which name the closure API that sets a conversion: the
// code needs nothing of it.
use crate::error::Elapsed;

/// Makes a timed-out attempt's error with `E: From<Elapsed>` (the default of a [`Retry`](crate::Retry)).
#[derive(Debug, Clone, Copy, Default)]
pub struct ElapsedInto;

/// Applies no per-attempt timeout, so the error type needs no conversion from [`Elapsed`]; set
/// by [`Retry::without_timeout`](crate::Retry::without_timeout).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTimeout;

/// How a [`Retry`](crate::Retry) turns a timed-out attempt into its error type: [`ElapsedInto`] (with
/// `E: From<Elapsed>`), an `FnMut(Elapsed) -> E` given to [`Retry::timeout_into`](crate::Retry::timeout_into), or
/// [`NoTimeout`].
#[diagnostic::on_unimplemented(
    message = "a timed-out attempt must become `{E}`, which lacks `reattempt::FromElapsed` (the closure API's and the tower layer's default conversion)",
    label = "`{E}` cannot hold a timeout",
    note = "call `.without_timeout()` if the calls need no per-attempt timeout, or `.timeout_into(|elapsed| …)` to make a `{E}` from one (on the closure API's call, or on the tower layer)",
    note = "or implement `From<reattempt::Elapsed>` for an error type of your own; below a tower layer, `map_err(tower::BoxError::from)` gives one that has it"
)]
pub trait TimeoutInto<E> {
    /// Whether the policy's `timeout` is applied at all.
    const APPLIES: bool = true;

    /// The error of an attempt that ran out of time.
    fn timed_out(&mut self, elapsed: Elapsed) -> E;
}

impl<E: FromElapsed> TimeoutInto<E> for ElapsedInto {
    fn timed_out(&mut self, elapsed: Elapsed) -> E {
        E::from_elapsed(elapsed)
    }
}

impl<E> TimeoutInto<E> for NoTimeout {
    const APPLIES: bool = false;

    fn timed_out(&mut self, _: Elapsed) -> E {
        unreachable!("reattempt: no attempt is timed without a timeout conversion")
    }
}

impl<E, F: FnMut(Elapsed) -> E> TimeoutInto<E> for F {
    fn timed_out(&mut self, elapsed: Elapsed) -> E {
        self(elapsed)
    }
}
