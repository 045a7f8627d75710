//! The state of one call and the pure rules over it: when an attempt may start and with how
//! much time, and, given how an attempt ended, whether to stop or to sleep and retry.
//!
//! Plain state and plain functions, with the clock passed in, so that every rule is unit-tested
//! without a runtime. [`steps`](crate::engine::steps) applies them for the drivers.
//!
//! The rooms, lowest first: [`word`] (the packed word of attempt, class and payment) <
//! [`engine`] (the [`Engine`] itself: its fields, and what reads and marks them) < [`start`]
//! (when an attempt begins, and with how much time), [`fault`] (fault injection's draw),
//! [`payment`] (what the budget is paid and given back), [`decision`] (what follows a failure),
//! [`detached`] (the state kept without its policy). This module only re-exports them.

mod decision;
mod detached;
mod engine;
#[cfg(feature = "testing")]
mod fault;
mod payment;
mod start;
mod word;

pub use decision::Decision;
pub use detached::Detached;
pub use engine::Engine;
pub(crate) use engine::earliest;
#[cfg(feature = "testing")]
pub(crate) use fault::Fault;
pub use start::Start;

#[cfg(test)]
mod tests;
