//! A test clock for blocking functions: the sleeps between attempts of a blocking
//! `#[retryable]` fn, and the engine's reading of the time, go by a paused clock that jumps to
//! each wake-up, as tokio's paused clock does for async code.

use std::cell::RefCell;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

thread_local! {
    /// The paused runtime of [`with_test_clock`] on this thread, if one runs.
    static TEST_RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

/// Runs `body` on a test clock: on this thread, the sleeps between the attempts of blocking
/// `#[retryable]` functions, and [`Script::next_blocking`](super::Script::next_blocking)'s
/// latencies, take no real time; the engine reads the clock from the same paused tokio clock
/// (`tokio::time::Instant`), which jumps to each wake-up. A test of 20 s of backoff takes
/// milliseconds (the facade's "Testing" chapter has one with a blocking `#[retryable]` fn).
///
/// Call it from a plain `#[test]`, not from inside a tokio runtime (it runs one of its own,
/// current-thread and paused; async code under test gets the same from
/// `#[tokio::test(start_paused = true)]`).
///
/// # Panics
///
/// When a test clock already runs on the thread (it does not nest), or tokio cannot build its
/// runtime.
///
/// ```
/// use std::time::{Duration, Instant};
/// use reattempt::testing::{Script, with_test_clock};
///
/// // A dependency that answers after 20 s.
/// let script: Script<&str, ()> = Script::new().ok_after(Duration::from_secs(20), "done");
/// let wall = Instant::now();
/// let (answer, took) = with_test_clock(|| {
///     let t0 = tokio::time::Instant::now();
///     (script.next_blocking(), t0.elapsed())
/// });
/// assert_eq!(answer, Ok("done"));
/// assert_eq!(took, Duration::from_secs(20), "20 s on the test clock");
/// assert!(wall.elapsed() < Duration::from_secs(5), "and next to none on the wall");
/// ```
pub fn with_test_clock<R>(body: impl FnOnce() -> R) -> R {
    // Restores the thread even if `body` panics (a failed assertion).
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            let runtime = TEST_RUNTIME.with(|slot| slot.borrow_mut().take());
            drop(runtime);
        }
    }
    let runtime = Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("reattempt::testing: a current-thread tokio runtime");
    let handle = runtime.handle().clone();
    let previous = TEST_RUNTIME.with(|slot| slot.borrow_mut().replace(runtime));
    assert!(
        previous.is_none(),
        "reattempt::testing::with_test_clock does not nest"
    );
    let _reset = Reset;
    let _entered = handle.enter();
    body()
}

/// Whether a test clock runs on this thread.
pub(crate) fn running() -> bool {
    TEST_RUNTIME.with(|slot| slot.borrow().is_some())
}

/// Sleeps `delay`: on the test clock when one runs on this thread (no real time passes), else
/// on the thread.
pub(crate) fn sleep_blocking(delay: Duration) {
    let slept = TEST_RUNTIME.with(|slot| {
        slot.borrow()
            .as_ref()
            .map(|runtime| runtime.block_on(tokio::time::sleep(delay)))
            .is_some()
    });
    if !slept {
        std::thread::sleep(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_on_the_test_clock_take_no_real_time() {
        let wall = std::time::Instant::now();
        let slept = with_test_clock(|| {
            assert!(running());
            let t0 = tokio::time::Instant::now();
            sleep_blocking(Duration::from_secs(3600));
            t0.elapsed()
        });
        assert_eq!(slept, Duration::from_secs(3600));
        assert!(wall.elapsed() < Duration::from_secs(5));
        assert!(!running(), "the clock is gone after the body");
    }

    #[test]
    fn the_clock_is_gone_after_a_panic() {
        let caught = std::panic::catch_unwind(|| with_test_clock(|| panic!("a failed assertion")));
        assert!(caught.is_err());
        assert!(!running());
    }
}
