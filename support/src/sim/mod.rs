//! Layered amplification over real HTTP (`tests/http_chain.rs`). The simulators of BENCHMARKS.md
//! (their models and charts) are in the `reattempt-bench` workspace member (`bench/`).

#[cfg(all(feature = "http", feature = "tower"))]
pub mod chain;
