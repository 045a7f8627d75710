//! The atomics, the lock and the clock of the shared guards (breaker and budget): std's and
//! tokio's in a normal build, loom's and a settable clock when built with `--cfg loom`, so that
//! `tests/loom.rs` can explore every interleaving of their concurrent paths.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// The guards' clock: tokio's (so that a paused test clock drives them).
#[cfg(not(loom))]
#[inline]
pub(crate) fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// The guards' clock under loom: a fixed start plus what the model advanced it by.
#[cfg(loom)]
pub(crate) fn now() -> tokio::time::Instant {
    clock::now()
}

/// A clock that only moves when told (loom builds only): loom explores interleavings, not time,
/// so a model sets the time it needs. Per OS thread (loom runs a model's threads on one), so that
/// models run in parallel by the test harness do not share it.
#[cfg(loom)]
#[doc(hidden)]
pub mod clock {
    use std::cell::Cell;
    use std::sync::OnceLock;
    use std::time::Duration;

    static START: OnceLock<std::time::Instant> = OnceLock::new();

    std::thread_local! {
        static OFFSET: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    }

    /// The clock's reading.
    pub fn now() -> tokio::time::Instant {
        let start = *START.get_or_init(std::time::Instant::now);
        tokio::time::Instant::from_std(start + OFFSET.with(Cell::get))
    }

    /// Back to the start (call at the start of each model run).
    pub fn reset() {
        OFFSET.with(|o| o.set(Duration::ZERO));
    }

    /// Moves the clock on by `d`.
    pub fn advance(d: Duration) {
        OFFSET.with(|o| o.set(o.get() + d));
    }
}
