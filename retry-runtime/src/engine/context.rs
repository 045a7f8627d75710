//! `context()`: what an attempt can learn about the call it belongs to.
//!
//! While an attempt is polled, a thread-local pointer names the call's [`Engine`]; it is set
//! before each poll and restored after (about a nanosecond), rather than entering a task-local
//! scope per attempt. Outside an attempt the pointer is null and `context()` gives `None`.
//!
//! Context and the inherited `max_elapsed` deadline therefore follow the poll, not the code's
//! nesting: a future polled inside an attempt sees them, but a task spawned from an attempt
//! (`tokio::spawn`, `spawn_blocking`, another thread) is polled elsewhere and inherits neither:
//! `context()` is `None` there, and a retrying call in it has only its own deadline.

use std::cell::Cell;
use std::time::Duration;

use tokio::time::Instant;

use crate::engine::key::IdempotencyKey;
use crate::engine::state::Engine;

thread_local! {
    /// The engine of the innermost attempt being polled, its lowest bit set when this call or
    /// one enclosing it still has attempts left after the one being polled (an engine is
    /// aligned to 8, so the bit is free): what the `one_layer` rule asks.
    static CURRENT: Cell<*const Engine<'static>> = const { Cell::new(std::ptr::null()) };
    /// The earliest `max_elapsed` deadline of the calls whose attempts are being polled on this
    /// thread: a retrying call nested in another's attempt may not outlive it.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Makes `engine` the current call until the guard is dropped (even by a panic), restoring the
/// call that was current before, so nested retrying calls see their own context; and narrows the
/// inherited deadline to this call's own while it is polled.
pub(crate) struct Enter {
    previous: *const Engine<'static>,
    /// Whether this call narrowed the inherited deadline, and the one to restore.
    narrowed: bool,
    previous_deadline: Option<Instant>,
}

impl Enter {
    #[inline]
    pub(crate) fn new(engine: &Engine<'_>) -> Self {
        let left = engine.attempt() < engine.policy().max_attempts();
        Self::tagged(engine, left)
    }

    /// As [`new`](Self::new), for a call whose attempts are over (its `#[recover]` fallback):
    /// a retrying call made in it sees only the calls enclosing this one as retrying.
    #[inline]
    pub(crate) fn recovering(engine: &Engine<'_>) -> Self {
        Self::tagged(engine, false)
    }

    #[inline]
    fn tagged(engine: &Engine<'_>, attempts_left: bool) -> Self {
        const _: () = assert!(std::mem::align_of::<Engine<'static>>() >= 2);
        let previous = CURRENT.get();
        let retrying = attempts_left || previous.addr() & RETRYING != 0;
        let ptr = std::ptr::from_ref(engine)
            .cast::<Engine<'static>>()
            .map_addr(|a| a | usize::from(retrying));
        CURRENT.set(ptr);
        let mut enter = Enter {
            previous,
            narrowed: false,
            previous_deadline: None,
        };
        // Only a policy with `max_elapsed` has a deadline: test that inline, before the call.
        if engine.policy().max_elapsed().is_some()
            && let Some(own) = engine.deadline()
        {
            let inherited = DEADLINE.get();
            if inherited.is_none_or(|i| own < i) {
                enter.narrowed = true;
                enter.previous_deadline = DEADLINE.replace(Some(own));
            }
        }
        enter
    }
}

impl Drop for Enter {
    #[inline]
    fn drop(&mut self) {
        CURRENT.set(self.previous);
        if self.narrowed {
            DEADLINE.set(self.previous_deadline);
        }
    }
}

/// The tag bit of `CURRENT`: some call whose attempt is being polled here has attempts left.
const RETRYING: usize = 1;

/// Whether a call whose attempt is being polled on this thread (however deep) still has attempts
/// left after it: a call with `one_layer` made here leaves the retrying to it.
#[inline]
pub(crate) fn outer_retries() -> bool {
    CURRENT.get().addr() & RETRYING != 0
}

/// The deadline inherited from the calls whose attempts enclose this point, if any.
#[inline]
pub(crate) fn inherited_deadline() -> Option<Instant> {
    DEADLINE.get()
}

/// Runs `f` with the engine of the innermost attempt being polled on this thread, if any.
pub(crate) fn with_current<T>(f: impl FnOnce(&Engine<'_>) -> T) -> Option<T> {
    let ptr = CURRENT.get().map_addr(|a| a & !RETRYING);
    // SAFETY: the pointer is non-null only while an `Enter` guard lives, and a guard lives only
    // inside the poll (or the blocking call) of an attempt that borrows the engine for that
    // whole time; the engine is only read here, through `Cell`s, on this same thread. The
    // lifetime is erased in the pointer and does not escape `f`.
    #[allow(unsafe_code, reason = "the one pointer the crate reads: see SAFETY")]
    unsafe { ptr.as_ref() }.map(f)
}

/// What an attempt knows about its call: a snapshot taken by [`context()`] (or handed to an
/// `on_retry` callback).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use retry_runtime::{RetryPolicy, context};
///
/// let policy = RetryPolicy::builder().delay(std::time::Duration::from_millis(1)).build().unwrap();
/// let mut keys = vec![];
/// let out: Result<u32, std::io::Error> = policy
///     .retry(|| {
///         let ctx = context().expect("inside an attempt");
///         keys.push(ctx.idempotency_key());
///         async move {
///             if ctx.attempt() < 3 { Err(std::io::ErrorKind::TimedOut.into()) } else { Ok(ctx.attempt()) }
///         }
///     })
///     .await;
/// assert_eq!(out.unwrap(), 3);
/// assert!(keys.iter().all(|k| *k == keys[0]));
/// assert!(context().is_none());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryContext {
    attempt: u32,
    max_attempts: u32,
    start: Instant,
    key: IdempotencyKey,
}

impl RetryContext {
    pub(crate) fn of(engine: &Engine<'_>) -> Self {
        RetryContext {
            attempt: engine.attempt(),
            max_attempts: engine.policy().max_attempts(),
            start: engine.start_or(Instant::now),
            key: engine.idempotency_key(),
        }
    }

    /// The attempt's number, 1 for the first.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The most attempts the call will make.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Time since the call's clock started: the first attempt's start when the policy has
    /// `max_elapsed`; otherwise the first moment it was needed (the first `context()` or the end
    /// of the first failed attempt), since a call that succeeds reads no clock.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// One random 128-bit key for the whole logical call: the same on every attempt, different
    /// for every call. Send it as `Idempotency-Key` so the server can apply a retried request once.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.key
    }
}

/// The context of the attempt being run on this thread, or `None` outside any retrying call.
///
/// It follows the poll: inside a task spawned from an attempt (`tokio::spawn`) it is `None`,
/// since that task is not polled by the attempt.
///
/// Calling it fixes the call's idempotency key (drawn once per call) and starts its clock if
/// neither was yet: it is the asking that costs, not the retrying.
///
/// ```
/// assert!(retry_runtime::context().is_none());
/// ```
pub fn context() -> Option<RetryContext> {
    with_current(RetryContext::of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryPolicy;

    #[test]
    fn context_is_set_only_inside_the_guard_and_nests() {
        let p = RetryPolicy::default();
        let mut outer = Engine::new(&p);
        outer.begin(false, Instant::now, None);
        let mut inner = Engine::new(&p);
        inner.begin(false, Instant::now, None);
        inner.begin(false, Instant::now, None);
        assert!(context().is_none());
        {
            let _g = Enter::new(&outer);
            assert_eq!(context().unwrap().attempt(), 1);
            {
                let _g = Enter::new(&inner);
                assert_eq!(context().unwrap().attempt(), 2);
            }
            assert_eq!(context().unwrap().attempt(), 1);
        }
        assert!(context().is_none());
    }

    #[test]
    fn outer_retries_while_any_enclosing_call_has_attempts_left() {
        let three = RetryPolicy::builder().max_attempts(3).build().unwrap();
        let one = RetryPolicy::builder().max_attempts(1).build().unwrap();
        let mut outer = Engine::new(&three);
        let mut middle = Engine::new(&one);
        middle.begin(false, Instant::now, None);
        assert!(!outer_retries(), "no call: nothing retries");
        outer.begin(false, Instant::now, None);
        {
            let _g = Enter::new(&outer);
            assert!(outer_retries(), "attempt 1 of 3");
            {
                let _g = Enter::new(&middle);
                assert!(outer_retries(), "the outer call still has attempts left");
                assert_eq!(
                    context().unwrap().max_attempts(),
                    1,
                    "the pointer is untagged"
                );
            }
            let _g = Enter::recovering(&outer);
            assert!(
                outer_retries(),
                "a fallback does not hide the calls around it"
            );
        }
        outer.begin(false, Instant::now, None);
        outer.begin(false, Instant::now, None);
        {
            let _g = Enter::new(&outer);
            assert!(!outer_retries(), "attempt 3 of 3: the last");
            let _g = Enter::new(&middle);
            assert!(!outer_retries(), "max_attempts = 1: none");
        }
        let _g = Enter::recovering(&Engine::new(&three));
        assert!(!outer_retries(), "a fallback's attempts are over");
    }

    #[test]
    fn the_guard_restores_on_panic() {
        let p = RetryPolicy::default();
        let e = Engine::new(&p);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = Enter::new(&e);
            panic!("boom");
        }));
        assert!(r.is_err());
        assert!(context().is_none());
    }
}
