//! The window's ring of buckets, in words: each slot holds its bucket's number (high 32 bits)
//! beside a count or a tick (low 32 bits).

use crate::sync::{AtomicU64, Ordering};

/// How many buckets the window is cut into (a power of two, so that a bucket's slot is the low
/// bits of its number even where the 32-bit numbers kept in the slots wrap).
pub(super) const BUCKETS: usize = 32;
#[allow(clippy::cast_possible_truncation, reason = "32")]
pub(super) const BUCKETS_U32: u32 = BUCKETS as u32;

/// Whole buckets without an accept after which an accept forgets them
/// ([`AdaptiveThrottleBuilder::forget_outage`]).
pub(super) const FORGET_AFTER: u64 = 2;

/// The slot of bucket `bucket`.
#[allow(clippy::cast_possible_truncation, reason = "below 32")]
pub(super) fn slot(bucket: u64) -> usize {
    (bucket % BUCKETS as u64) as usize
}

/// Whether bucket `b` is older than bucket `than` (numbers compared by wrapping difference).
pub(super) fn older(b: u32, than: u32) -> bool {
    (1..1 << 31).contains(&than.wrapping_sub(b))
}

/// The low 32 bits of a bucket's number, as kept in the slots.
#[allow(clippy::cast_possible_truncation, reason = "wrapping bucket numbers")]
pub(super) fn low(bucket: u64) -> u32 {
    bucket as u32
}

pub(super) fn bucket_of(word: u64) -> u32 {
    (word >> 32) as u32
}

#[allow(clippy::cast_possible_truncation, reason = "the low half")]
pub(super) fn count_of(word: u64) -> u32 {
    word as u32
}

/// Adds one to bucket `bucket`'s count in `slot`, starting it afresh if the slot still holds an
/// older bucket.
pub(super) fn bump(slot: &AtomicU64, bucket: u64) {
    let b = low(bucket);
    let _ = slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
        let t = bucket_of(w);
        if t == b {
            let n = count_of(w).saturating_add(1);
            Some(u64::from(b) << 32 | u64::from(n))
        } else if t.wrapping_sub(b) < 1 << 31 {
            // The slot already holds a newer bucket (this thread was descheduled across a
            // bucket's end, or across a window of them): the count belongs to a bucket that is
            // gone. (The slots only hold the last 32 buckets, so the difference is small.)
            None
        } else {
            Some(u64::from(b) << 32 | 1)
        }
    });
}

/// `max(0, (requests − K × accepts) / (requests + 1))`.
#[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
pub(super) fn probability(requests: u64, accepts: u64, k: f64) -> f64 {
    let r = requests as f64;
    ((r - k * accepts as f64) / (r + 1.0)).max(0.0)
}
