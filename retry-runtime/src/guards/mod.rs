//! Guards shared by many calls: the circuit breaker, which stops calls to a failing dependency,
//! and the retry budget, which caps how many retries all calls together may make.

pub(crate) mod breaker;
pub(crate) mod budget;
