//! The simulators of BENCHMARKS.md: their models, run by the `contention`, `storm`, `overload`,
//! `fleet` and `hedge_sim` examples and checked on a small sweep by `tests/simulations.rs` (this crate's),
//! and the charts the examples draw.

pub mod chart;
pub mod fleet;
pub mod hedge;
pub mod occ;
pub mod overload;
pub mod storm;
