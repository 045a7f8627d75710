//! An `Option<Instant>` in 8 bytes, for the state every retrying future carries.
//!
//! An `Instant` takes 16 bytes; a call's start fits in a signed nanosecond offset (±292 years)
//! from one anchor instant taken once per process. Signed, because under tokio's paused clock a
//! runtime's "now" may lie before an anchor taken under another runtime's advanced clock.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

static ANCHOR: OnceLock<Instant> = OnceLock::new();

fn anchor(near: Instant) -> Instant {
    *ANCHOR.get_or_init(|| near)
}

/// The offset that stands for no instant.
const UNSET: i64 = i64::MIN;

/// An instant, or none yet: its offset from the anchor, stored XOR [`UNSET`] so that an empty
/// slot is all zeros (and is written with the zeros around it in a new call's state).
#[derive(Debug)]
pub(crate) struct InstantSlot(Cell<i64>);

impl Default for InstantSlot {
    fn default() -> Self {
        InstantSlot::empty()
    }
}

impl InstantSlot {
    #[inline]
    pub(crate) const fn empty() -> Self {
        InstantSlot(Cell::new(0))
    }

    /// A slot holding the instant now (out of line: only a call with `max_elapsed` needs it).
    #[cold]
    #[inline(never)]
    pub(crate) fn now() -> Self {
        let slot = InstantSlot::empty();
        slot.set(Instant::now());
        slot
    }

    pub(crate) fn get(&self) -> Option<Instant> {
        let offset = self.0.get() ^ UNSET;
        if offset == UNSET {
            return None;
        }
        let anchor = *ANCHOR.get()?;
        let magnitude = Duration::from_nanos(offset.unsigned_abs());
        if offset >= 0 {
            anchor.checked_add(magnitude)
        } else {
            anchor.checked_sub(magnitude)
        }
    }

    pub(crate) fn set(&self, at: Instant) {
        let anchor = anchor(at);
        let offset = match at.checked_duration_since(anchor) {
            Some(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
            None => i64::try_from(anchor.duration_since(at).as_nanos())
                .map_or(UNSET + 1, |before| -before),
        };
        self.0.set(offset ^ UNSET);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_before_and_after_the_anchor() {
        let now = Instant::now();
        let slot = InstantSlot::empty();
        assert_eq!(slot.get(), None);
        for at in [
            now,
            now + Duration::from_secs(3600),
            now + Duration::from_nanos(1),
        ] {
            slot.set(at);
            assert_eq!(slot.get(), Some(at));
        }

        if let Some(before) = anchor(now).checked_sub(Duration::from_millis(5)) {
            slot.set(before);
            assert_eq!(slot.get(), Some(before));
        }
    }
}
