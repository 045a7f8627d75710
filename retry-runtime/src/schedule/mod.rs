//! When the attempts happen: the policy, the sequence of delays it gives, the latency estimator
//! of a quantile `hedge_after` and the generator of jitter. The rules these follow (durations,
//! backoff, jitter, `hedge_after`, the settings' checks) are retry-rules'.

pub(crate) mod delays;
pub(crate) mod hedge;
pub(crate) mod jitter;
pub(crate) mod policy;
pub(crate) mod preset;
pub(crate) mod rng;
