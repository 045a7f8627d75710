//! The client-side adaptive throttle (see [`AdaptiveThrottle`]).
//!
//! The rooms, lowest first: [`buckets`] (the window's ring of counters: how a bucket's number
//! and count share a word) < [`adaptive`] (the throttle: its window and its decisions) <
//! [`builder`]. This module only re-exports them.

mod adaptive;
mod buckets;
mod builder;

pub use adaptive::AdaptiveThrottle;
pub use builder::AdaptiveThrottleBuilder;

#[cfg(all(test, not(loom)))]
#[allow(clippy::float_cmp, reason = "exact zeros")]
mod tests;
