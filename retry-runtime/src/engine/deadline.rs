//! Instants a limit or a sleep ends at, saturating where `Instant` cannot go.
//!
//! Below the engine's steps and the drivers' timers, which both compute them: plain arithmetic
//! on `tokio::time::Instant`, knowing nothing of a call.

use std::time::Duration;

use tokio::time::Instant;

/// The deadline of an attempt cut after `limit`, starting at `start` (`None`: too far to
/// represent, so never reached, as `tokio::time::timeout` treats it).
#[inline]
pub(crate) fn deadline_after(start: Instant, limit: Duration) -> Option<Instant> {
    start.checked_add(limit)
}

/// `delay` after `from`, or about 30 years after it (tokio's own "far future": never, in
/// practice) when that is past the range of `Instant` (`Duration::MAX` from a config).
pub(crate) fn instant_after(from: Instant, delay: Duration) -> Instant {
    const THIRTY_YEARS: Duration = Duration::from_secs(86_400 * 365 * 30);
    from.checked_add(delay)
        .or_else(|| from.checked_add(THIRTY_YEARS))
        .unwrap_or(from)
}
