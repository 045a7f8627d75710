//! reattempt's benches, simulators and comparisons (a workspace crate, `publish = false`): they
//! compare reattempt with backon, tokio-retry, tower's retry and reqwest-retry, and draw the
//! charts in `docs/*.svg`. They live apart from the `reattempt` package so that its examples
//! (`cargo run --example quickstart`) do not compile criterion, plotters and the alternatives.
//!
//! ```text
//! cargo bench -p reattempt-bench --bench overhead
//! cargo run -p reattempt-bench --release --example storm
//! cargo test -p reattempt-bench
//! ```
//!
//! - [`sim`]: the simulators' models (`occ`, `storm`, `overload`, `hedge`) and their charts.

pub mod sim;
