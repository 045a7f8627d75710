//! Where the randomness of jitter and idempotency keys comes from.
//!
//! Jitter draws from a small, fast generator per thread, seeded from the operating system on
//! first use; [`seed_rng`] reseeds it so that a test can reproduce a schedule. Idempotency keys
//! come from `rand`'s cryptographically seeded thread generator instead, so that a seeded test
//! never makes two processes share keys.

use std::cell::RefCell;

use rand::{RngExt, SeedableRng, rngs::SmallRng};

thread_local! {
    static JITTER_RNG: RefCell<Option<SmallRng>> = const { RefCell::new(None) };
}

/// Reseeds this thread's jitter generator: the same seed then gives the same sleeps.
///
/// Only the current thread is affected (a `#[tokio::test]` runs on one thread).
///
/// ```
/// use reattempt::{RetryPolicy, seed_rng};
///
/// let policy = RetryPolicy::builder().max_attempts(5).build().unwrap();
/// seed_rng(7);
/// let first: Vec<_> = policy.delays().collect();
/// seed_rng(7);
/// let again: Vec<_> = policy.delays().collect();
/// assert_eq!(first, again);
/// ```
pub fn seed_rng(seed: u64) {
    JITTER_RNG.with(|cell| *cell.borrow_mut() = Some(SmallRng::seed_from_u64(seed)));
}

/// Runs `f` with this thread's jitter generator.
pub(crate) fn with_jitter_rng<T>(f: impl FnOnce(&mut SmallRng) -> T) -> T {
    JITTER_RNG.with(|cell| {
        let mut slot = cell.borrow_mut();
        let rng = slot.get_or_insert_with(|| SmallRng::from_rng(&mut rand::rng()));
        f(rng)
    })
}

/// 128 bits from the operating-system-seeded thread generator.
pub(crate) fn key_bits() -> u128 {
    rand::rng().random::<u128>()
}
