//! What reattempt's integration tests share (a workspace crate, `publish = false`), and what is
//! no user feature: the fault-injecting HTTP service they run against is published as
//! `reattempt::testing::http` (feature `testing`), which this crate turns on. The examples in
//! `examples/` do not use this crate: each can be copied into a user's crate as it is.
//!
//! - [`http_client`] and `retry_after`: what the tests' clients use;
//! - `payments`: the end-to-end tests' payment client, written with `#[retryable]` (feature
//!   `http`);
//! - `sim::chain`: three retrying services on loopback, for `tests/http_chain.rs` (features
//!   `http` and `tower`).
//!
//! # Features
//!
//! `http` (on by default) turns on `reattempt/http`, for `retry_after` and `payments`, and
//! `reattempt/testing`, for the service `payments` calls. The
//! root crate depends on this one with `default-features = false` and turns `http` on from its
//! own `http` feature, so that `cargo test --no-default-features` still builds reattempt without
//! it (the examples and tests that need it say so with `required-features`).
//!
//! # A dev-dependency cycle
//!
//! This crate depends on `reattempt`, and `reattempt` has it as a dev-dependency. Cargo allows
//! that; the examples and the integration tests (`tests/*.rs`) link one `reattempt`, shared with
//! this crate. The unit tests inside `reattempt`'s `src/` would not: they are a second build of
//! `reattempt`, whose types differ from the ones this crate sees, so they do not use this crate.

pub mod sim;

mod client;
#[cfg(feature = "http")]
pub mod payments;

pub use client::http_client;
#[cfg(feature = "http")]
pub use client::retry_after;
