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

#[cfg(feature = "http")]
pub mod http;
