//! What the service saw: one record per request, and how the service ended it.

use std::time::{Instant, SystemTime};

use super::Fault;

/// How the service ended one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Served, and the side effect was applied (a first request for its key, or no key).
    Applied,
    /// Served from the idempotency store: the stored answer, no new side effect.
    Replayed,
    /// Served without a side effect (a read).
    Read,
    /// Answered with this status without doing anything (a 503, a 429, a 400, a 422).
    Status(u16),
    /// No answer: hung until the client gave up.
    NoAnswer,
    /// The connection was reset.
    Reset,
}

/// One request, as the service saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When it arrived.
    pub at: Instant,
    /// When it arrived, by the wall clock (which `Retry-After` dates are in).
    pub wall: SystemTime,
    /// `POST /charges`, `GET /prices/tea`, …
    pub route: String,
    /// The `order_id`, the `to` or the sku, when the request had one.
    pub subject: Option<String>,
    /// Its `Idempotency-Key` header.
    pub key: Option<String>,
    /// The fault it met.
    pub fault: Fault,
    /// How it ended (`Applied` also for a commit whose answer was lost or reset).
    pub outcome: Outcome,
    /// For a 429: the wall-clock instant before which a retry is too early.
    pub retry_not_before: Option<SystemTime>,
}
