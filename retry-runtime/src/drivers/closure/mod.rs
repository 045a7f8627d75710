//! The closure API: `policy.retry(|| async { … }).retry_if(…).on_retry(…).await`, with the
//! attribute's names for the same things.
//!
//! The rooms, lowest first: [`guard_slot`] (the shared guards a call carries in its type, with
//! the conversions of their rejections) < [`retry`] (the call being set up: [`Retry`]) <
//! [`hook_settings`] (its hooks, by the attribute's names), [`guard_settings`] (its guards,
//! budget, conversions and name), [`future`] (the attempt loop: [`RetryFuture`]). This module
//! only re-exports them.

mod future;
mod guard_settings;
mod guard_slot;
mod hook_settings;
mod retry;

pub use future::RetryFuture;
pub use guard_slot::{AddGuard, Breaker, BreakerSlot, Conversion, Given, NoBreaker, ViaTrait};
pub use retry::Retry;
