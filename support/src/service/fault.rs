//! What happens to one request: the faults a script is made of.

use std::time::Duration;

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No fault: the request is served (and its side effect applied once per key).
    Pass,
    /// No answer and no side effect, until the client gives up (or the service stops): a hung
    /// upstream. Only a client-side timeout gets the caller out.
    Hang,
    /// The side effect is applied (and stored under the key), then no answer ever comes: the
    /// worst case for a non-idempotent call.
    LoseResponse,
    /// The side effect is applied, then the connection is reset instead of answering.
    CommitThenReset,
    /// The side effect is applied (and stored under the key), then the answer comes only after
    /// this delay: a replica in a GC pause or behind a slow disk, the straggler hedging is for.
    /// A copy of the request sent meanwhile with the same key gets the stored answer at once.
    SlowAnswer(Duration),
    /// The connection is reset before anything is done.
    Reset,
    /// `503 Service Unavailable` (a rolling deploy), nothing done.
    Unavailable,
    /// `429 Too Many Requests` with a `Retry-After` header, nothing done.
    RateLimited(RetryAfter),
    /// An error status with one header of the server's own (`x-amz-retry-after: 1500`,
    /// `x-should-retry: false`), nothing done.
    Hinted {
        /// The status.
        status: u16,
        /// The header's name.
        header: &'static str,
        /// Its value.
        value: &'static str,
    },
}

/// The form of a `Retry-After` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: 1` (delta-seconds).
    Seconds(u64),
    /// `Retry-After: Sun, 06 Nov 1994 08:49:37 GMT`: at least this long from now, rounded up to
    /// the next whole second (the header's resolution).
    Date(Duration),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Pass => f.write_str("no fault"),
            Fault::Hang => f.write_str("hang"),
            Fault::LoseResponse => f.write_str("commit, then lose the response"),
            Fault::CommitThenReset => f.write_str("commit, then reset the connection"),
            Fault::SlowAnswer(d) => write!(f, "commit, then answer after {d:?}"),
            Fault::Reset => f.write_str("connection reset"),
            Fault::Unavailable => f.write_str("503"),
            Fault::RateLimited(RetryAfter::Seconds(s)) => write!(f, "429, Retry-After: {s}"),
            Fault::RateLimited(RetryAfter::Date(d)) => write!(f, "429, Retry-After: now + {d:?}"),
            Fault::Hinted {
                status,
                header,
                value,
            } => write!(f, "{status}, {header}: {value}"),
        }
    }
}
