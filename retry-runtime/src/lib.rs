//! The runtime of [reattempt](https://docs.rs/reattempt): retry policies, backoff, jitter, the
//! attempt engine, the call context and the closure API. Every retry decision is made here, in
//! plain code that is tested without macros; `#[retryable]` only writes the loop that calls it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use retry_runtime::{Jitter, RetryPolicy};
//!
//! let policy = RetryPolicy::builder()
//!     .max_attempts(4)
//!     .delay(Duration::from_millis(200))
//!     .max_delay(Duration::from_secs(2))
//!     .jitter(Jitter::Full)
//!     .timeout(Duration::from_secs(1))
//!     .build()?;
//! let value = policy.retry(|| async { Ok::<_, std::io::Error>(42) }).await?;
//! assert_eq!(value, 42);
//! # Ok(())
//! # }
//! ```

mod backoff;
mod breaker;
mod budget;
mod call;
mod classify;
#[cfg(feature = "serde")]
mod config;
mod context;
mod delays;
mod duration;
mod engine;
mod error;
mod events;
#[cfg(feature = "http")]
pub mod http;
mod instant_slot;
mod jitter;
mod policy;
mod retry;
mod rng;

pub use backoff::Backoff;
pub use breaker::{BreakerState, CircuitBreaker, CircuitBreakerBuilder, Permit};
pub use budget::{RetryBudget, RetryBudgetBuilder};
pub use call::{
    Attempt, Call, CallName, Decision, FromBreakerOpen, FromElapsed, Guards, LoggedError, Recover,
    TimedAttempt, decide,
};
pub use classify::{Transient, is_timeout, transient};
pub use context::{IdempotencyKey, RetryContext, context};
pub use delays::Delays;
pub use duration::{ParseDurationError, parse_duration};
pub use engine::{Engine, GiveUpReason, Limits, Verdict};
pub use error::{BreakerOpen, ConfigError, Elapsed};
pub use events::{LogError, ParseLogError};
pub use jitter::{Jitter, ParseJitterError};
pub use policy::{PolicyError, PolicySettings, RetryPolicy, RetryPolicyBuilder};
pub use retry::{
    Breaker, BreakerSlot, ElapsedInto, EveryError, NoBreaker, NoHint, NoTimeout, NoTimeoutIf,
    OnRetry, Retry, RetryAfter, RetryFuture, RetryWhen, Silent, TimeoutIf, TimeoutInto,
};
pub use rng::seed_rng;
