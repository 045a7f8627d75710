//! Issue 25, finding 12: key values passed through `macro_rules!` fragments (invisible
//! delimiters), with another key after them.

use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::{recover, retryable};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail;

static CALLS: AtomicU32 = AtomicU32::new(0);

#[recover]
fn fallback(_: Fail) -> Result<u32, Fail> {
    Ok(99)
}

// rustfmt re-indents an attribute's arguments in a `macro_rules!` body on every run.
#[rustfmt::skip]
macro_rules! fragments {
    ($name:ident, $d:literal, $n:expr, $m:expr, $md:expr, $j:literal, $r:path, $label:literal) => {
        #[retryable(
            delay = $d,
            max_attempts = $n,
            multiplier = $m,
            max_delay = $md,
            jitter = $j,
            recover = $r,
            name = $label,
            backoff = "exponential"
        )]
        fn $name() -> Result<u32, Fail> {
            CALLS.fetch_add(1, Ordering::Relaxed);
            Err(Fail)
        }
    };
}

fragments!(
    through_fragments,
    "1ms",
    3,
    2,
    "5ms",
    "none",
    fallback,
    "fragments"
);

macro_rules! last_and_first {
    ($d:expr, $n:literal) => {
        #[retryable(max_attempts = $n, delay = $d, jitter = "none")]
        fn expr_duration() -> Result<u32, Fail> {
            if reattempt::context().is_some_and(|c| c.attempt() < 2) {
                return Err(Fail);
            }
            Ok(reattempt::context().map_or(0, |c| c.attempt()))
        }
    };
}

last_and_first!("1ms", 2);

#[test]
fn fragment_values_are_read_as_written() {
    assert_eq!(through_fragments(), Ok(99));
    assert_eq!(CALLS.load(Ordering::Relaxed), 3);
    assert_eq!(expr_duration(), Ok(2));
}
