//! The rules that [reattempt](https://docs.rs/reattempt)'s `#[retryable]` checks at compile time
//! and its runtime applies at run time, written once: how durations are read (`"250ms"`), the
//! backoff and jitter kinds, `hedge_after` and `log_error` values, and a policy's settings with
//! the rules they are held to ([`PolicySettings::check`], [`PolicyError`]).
//!
//! The proc macro (`retry-macros`) and the runtime (`retry-runtime`) both depend on this crate,
//! so that a build's host side (the proc macro) compiles nothing of the runtime: no tokio, no
//! rand. Use these items through `reattempt` (or `retry-runtime`), which re-export each of them
//! at its own path (`reattempt::Jitter`, `reattempt::runtime::PolicySettings`).
//!
//! ```
//! use std::time::Duration;
//! use reattempt::{Jitter, parse_duration, runtime::PolicySettings};
//!
//! let settings = PolicySettings {
//!     delay: Some(parse_duration("3s")?),
//!     max_delay: Some(parse_duration("2s")?),
//!     jitter: Some("equal".parse::<Jitter>()?),
//!     ..PolicySettings::default()
//! };
//! let err = settings.check().unwrap_err();
//! assert_eq!(err.field(), "delay");
//! assert_eq!(err.to_string(), "invalid `delay`: must not exceed `max_delay`: 3s > 2s");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! One feature, off by default: `serde`, `Deserialize` for [`Backoff`], [`Jitter`], [`LogError`],
//! [`HedgeAfter`] and [`HintMode`]. `reattempt`'s `serde` (and `tonic`, which reads service
//! configs with it) turns it on for the proc macro and the runtime alike, and no random draw is
//! made here (the runtime's `SampleJitter` draws a jittered delay), so that a user's debug build
//! (`cargo build`, `test`, `run`) builds the crate once, for the macro and the runtime. (`cargo
//! check` and release builds build a proc macro's dependencies apart whatever their features.)

#![forbid(unsafe_code)]

mod backoff;
#[cfg(feature = "serde")]
mod de;
mod dead;
mod duration;
mod hedge;
mod hint;
mod jitter;
mod log;
mod settings;
mod stream;

pub use backoff::{Backoff, ParseBackoffError};
pub use dead::DeadSetting;
pub use duration::{ParseDurationError, parse_duration};
pub use hedge::{HedgeAfter, ParseHedgeAfterError, Quantiles};
pub use hint::{HintMode, ParseHintModeError};
pub use jitter::{Jitter, ParseJitterError};
pub use log::{LogError, ParseLogError};
pub use settings::{CheckedSettings, PolicyError, PolicySettings};
pub use stream::{StreamError, StreamSettings};

/// What the runtime's delays share with [`Backoff`] and [`Jitter`]: not part of the documented
/// API, and not bound by semver.
#[doc(hidden)]
pub mod __private {
    pub use crate::backoff::{nanos, scale};
}
