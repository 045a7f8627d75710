//! What the engine meets from outside: which errors are transient (`classify`), HTTP statuses
//! and `Retry-After` (`http`), gRPC statuses (`tonic`), database errors (`sqlx`), policies read
//! from configuration files (`config`), and the client stacks the engine drives: a tower layer
//! (`tower`), a reqwest-middleware `Middleware` (`reqwest_middleware`).

pub(crate) mod classify;
#[cfg(feature = "serde")]
pub(crate) mod config;
#[cfg(feature = "http")]
mod hints;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub(crate) mod outer;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "sqlx")]
mod sqlx;
#[cfg(feature = "tonic")]
pub mod tonic;
#[cfg(feature = "tower")]
pub mod tower;
