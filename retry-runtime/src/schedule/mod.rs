//! When the attempts happen: the policy's settings, the backoff and jitter that space the
//! attempts, the sequence of delays they give, and the durations they are written in.

pub(crate) mod backoff;
pub(crate) mod delays;
pub(crate) mod duration;
pub(crate) mod hedge;
pub(crate) mod jitter;
pub(crate) mod policy;
pub(crate) mod rng;
