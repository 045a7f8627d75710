//! [`ReplayBody`]: a request body recorded up to a cap while an attempt sends it, and replayed
//! to the next attempts (feature `http`). Public as `http::ReplayBody`.
//!
//! One recording is shared by every clone of a body (an `Arc`); each clone has its own read
//! position. A clone first yields the recorded chunks, then reads on from the inner body (the
//! clone that is ahead reads it, and appends what it reads to the recording), so a retry, or a
//! hedge sent while the first attempt still streams, sends exactly the bytes the first did.
//! Past the cap nothing is kept: the recording is dropped, the clone that reads the inner body
//! streams the rest to its own attempt, and the call is committed to that attempt
//! ([`ReplayBody::is_capped`]).

// The rooms, each using only those before it: `error`, `copies`, `body`.
mod body;
mod copies;
mod error;
#[cfg(test)]
mod tests;

pub use self::body::{DEFAULT_REPLAY_CAP, ReplayBody};
#[cfg_attr(
    not(feature = "tower"),
    allow(unused_imports, reason = "read by the retrying clients")
)]
pub(crate) use self::copies::Committed;
#[cfg_attr(
    not(feature = "tonic"),
    allow(unused_imports, reason = "used by the gRPC layer")
)]
pub(crate) use self::copies::Retire;
#[cfg_attr(
    not(feature = "tonic"),
    allow(unused_imports, reason = "used by the gRPC layer")
)]
pub(crate) use self::error::BodyFailed;
pub use self::error::BodyNotReplayable;
