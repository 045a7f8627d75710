//! A stream retried by resuming it: `policy.retry_stream(open).resume(initial, advance)`, a
//! [`RetryStream`] that re-opens a failed stream from a checkpoint the user derives from the
//! items delivered, so that each item reaches the consumer once and in order.
//!
//! The rooms, lowest first: [`phase`] (where a stream is, and the breaker's permit it holds),
//! [`recover`] (the fallback when the stream gives up) < [`setup`]
//! (the stream being set up: [`StreamSetup`], [`RetryStream`] and its settings) < [`poll`] (the
//! attempts: open, items, idle timer, sleep). This module only re-exports them.

mod phase;
mod poll;
mod recover;
mod setup;
#[cfg(test)]
mod tests;

pub use poll::Opened;
pub use recover::{NoRecover, NoStream, RecoverStream};
pub use setup::{RetryStream, StreamSetup};
