//! What reattempt's examples and integration tests share (a workspace crate, `publish = false`):
//!
//! - [`Service`]: a fault-injecting HTTP service (axum on `127.0.0.1`, port 0) whose requests meet
//!   the faults a script says, and which applies each side effect once per `Idempotency-Key`
//!   ([`service`]);
//! - [`http_client`], [`root_cause`], [`init_tracing`] and `retry_after`: what the clients of
//!   the examples use;
//! - `payments`: the end-to-end tests' payment client, written with `#[retryable]` (feature
//!   `http`);
//! - [`sim`]: the simulators' models (`occ`, `storm`) and their charts, used by the `contention`
//!   and `storm` examples and by `tests/simulations.rs`.
//!
//! ```
//! use reattempt_support::{Fault, Outcome, Service, http_client};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = Service::start().await;
//! service.script_for("o-1", [Fault::Unavailable]);
//! let charge = || {
//!     http_client()
//!         .post(format!("{}/charges", service.url()))
//!         .header("Idempotency-Key", "k-1")
//!         .json(&serde_json::json!({"order_id": "o-1", "amount_cents": 1250}))
//!         .send()
//! };
//! assert_eq!(charge().await.unwrap().status(), 503);
//! assert_eq!(charge().await.unwrap().status(), 201);
//! assert_eq!(charge().await.unwrap().status(), 201); // replayed: the same key
//! let outcomes: Vec<_> = service.seen_for("o-1").into_iter().map(|s| s.outcome).collect();
//! assert_eq!(outcomes, [Outcome::Status(503), Outcome::Applied, Outcome::Replayed]);
//! assert_eq!(service.effects("o-1"), 1);
//! # }
//! ```
//!
//! # Features
//!
//! `http` (on by default) turns on `reattempt/http`, for `retry_after` and `payments`. The
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

pub mod service;
pub mod sim;

mod client;
#[cfg(feature = "http")]
pub mod payments;

#[cfg(feature = "http")]
pub use client::retry_after;
pub use client::{http_client, init_tracing, root_cause};
pub use service::{Fault, Outcome, RetryAfter, Seen, Service};
