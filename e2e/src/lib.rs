//! reattempt's end-to-end tests and examples whose dependencies are big (tonic, h2, sqlx with
//! SQLite from source, metrics-util), and the conformance suite: a workspace crate,
//! `publish = false`, with no code of its own. They live apart from the `reattempt` package so
//! that its examples (`cargo run --example quickstart`) do not compile them.
//!
//! ```text
//! cargo test -p reattempt-e2e --all-features
//! cargo run -p reattempt-e2e --example grpc --features tonic
//! cargo run -p reattempt-e2e --example sqlite --features sqlx
//! ```
