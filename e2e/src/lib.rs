//! reattempt's end-to-end tests and examples whose dependencies are big (tonic, h2, sqlx with
//! SQLite from source, metrics-util), and the conformance suite: a workspace crate,
//! `publish = false`, whose only code is the `numbers` gRPC service of the stream tests
//! (feature `tonic`). They live apart from the `reattempt` package so
//! that its examples (`cargo run --example quickstart`) do not compile them.
//!
//! ```text
//! cargo test -p reattempt-e2e --all-features
//! cargo run -p reattempt-e2e --example grpc --features tonic
//! cargo run -p reattempt-e2e --example sqlite --features sqlx
//! ```

#[cfg(feature = "tonic")]
pub mod numbers;

// The examples of the README and of the guide's chapters that need this crate's dependencies
// (tonic-health, sqlx with SQLite, metrics-util) run here as doctests, against `reattempt`: what a
// newcomer copies from them compiles. The facade renders the chapters (`reattempt::guide`).
#[cfg(all(
    doctest,
    feature = "reqwest-middleware",
    feature = "tonic",
    feature = "sqlx",
    feature = "serde"
))]
#[doc = include_str!("../../README.md")]
pub struct Readme;

#[cfg(all(doctest, feature = "reqwest", feature = "tonic", feature = "sqlx"))]
#[doc = include_str!("../../docs/guide/errors.md")]
pub struct GuideErrors;

#[cfg(all(doctest, feature = "tonic"))]
#[doc = include_str!("../../docs/guide/grpc.md")]
pub struct GuideGrpc;

#[cfg(all(doctest, feature = "sqlx"))]
#[doc = include_str!("../../docs/guide/unknown_outcomes.md")]
pub struct GuideUnknownOutcomes;

#[cfg(all(doctest, feature = "metrics", feature = "spans"))]
#[doc = include_str!("../../docs/guide/observability.md")]
pub struct GuideObservability;
