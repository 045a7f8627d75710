//! The simulators of BENCHMARKS.md: their models, run by the `contention`, `storm` and `overload` examples and
//! checked on a small sweep by `tests/simulations.rs`, and the charts the examples draw.

#[cfg(all(feature = "http", feature = "tower"))]
pub mod chain;
pub mod chart;
pub mod hedge;
pub mod occ;
pub mod overload;
pub mod storm;
