//! Testing code that retries (feature `testing`): what a test hands the code under test, and
//! what it reads back afterwards.
//!
//! - [`Script`]: scripted outcomes, one per attempt (errors, successes, latencies), and what was
//!   asked of it.
//! - [`trace`] and [`trace_blocking`]: the attempts, retries, delays, give-ups and guards'
//!   rejections of every call in a scope, without installing a tracing subscriber by hand.
//! - [`with_test_clock`]: blocking `#[retryable]` functions sleep on a paused clock, so a test of
//!   20 s of backoff takes milliseconds (async code has tokio's paused clock already:
//!   `#[tokio::test(start_paused = true)]`, with tokio's `test-util` feature).
//! - [`FaultInjection`]: a policy setting that injects errors and latency into a share of the
//!   attempts, drawn from a seed, to rehearse an outage through the production code path
//!   ([`faults`]).
//! - `http` (feature `testing-http`): a fault-injecting HTTP service on loopback, for clients'
//!   tests.

pub(crate) mod clock;
pub mod faults;
#[cfg(feature = "testing-http")]
pub mod http;
mod script;
mod trace;

pub use clock::with_test_clock;
pub use faults::{FaultInjection, FaultInjectionBuilder, InjectedFault};
pub use script::{Asked, Script};
pub use trace::{GiveUp, Retry, Trace, TraceEvent, trace, trace_blocking};
