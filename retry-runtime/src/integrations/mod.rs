//! What the engine meets from outside: which errors are transient (`classify`), HTTP statuses
//! and `Retry-After` (`http`), and policies read from configuration files (`config`).

pub(crate) mod classify;
#[cfg(feature = "serde")]
pub(crate) mod config;
#[cfg(feature = "http")]
pub mod http;
