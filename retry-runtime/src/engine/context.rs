//! `context()`: what an attempt can learn about the call it belongs to.
//!
//! While an attempt is polled, a thread-local pointer names the call's [`Engine`] (through a
//! frame on the stack of the poll); it is set before each poll and restored after (about a
//! nanosecond), rather than entering a task-local scope per attempt. Outside an attempt the pointer is null and `context()` gives `None`.
//!
//! Context and the inherited `max_elapsed` deadline therefore follow the poll, not the code's
//! nesting: a future polled inside an attempt sees them, but a task spawned from an attempt
//! (`tokio::spawn`, `spawn_blocking`, another thread) is polled elsewhere and inherits neither:
//! `context()` is `None` there, and a retrying call in it has only its own deadline.
//!
//! A call made in another process (a client retrying an HTTP request to this service) is not in
//! the frames either. A server-side layer that reads "the caller still has attempts left" from
//! the request (`http::OUTER_ATTEMPTS_LEFT`) polls the handler inside an *outer frame*
//! ([`enter_outer`]; `http::OuterCall` runs a future in one): a frame with no engine that says "a call around this one has
//! `n` attempts left". `one_layer` calls made in the handler then leave the retrying to that
//! caller ([`outer_retries`]), and the handler's own requests say so in turn
//! ([`outer_attempts_left`]).

use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::time::Duration;

use tokio::time::Instant;

use crate::engine::key::IdempotencyKey;
use crate::engine::state::Engine;

/// One call whose attempt is being polled on this thread: its engine, and the frame of the call
/// it is nested in (null at the outermost). Frames live on the stack of the poll ([`Slot`]),
/// so that entering a call is two stores and a thread-local swap; the inherited deadline is
/// worked out from them only when it is asked for.
#[repr(C)]
struct Frame {
    /// The call's engine; the lowest bit of its address set when this frame begins a
    /// [`TaggedFrame`] (an engine is aligned to 8 bytes: the bit is free). Null (but for that
    /// bit) for an outer frame ([`enter_outer`]): a call made elsewhere (the client of a request
    /// this thread serves) that has attempts left.
    engine: *const Engine<'static>,
    parent: *const Frame,
}

/// A frame that says more than its engine (the copy of a hedged call, a `#[recover]` fallback,
/// or an outer frame), so that the common frame stays two words.
#[repr(C)]
struct TaggedFrame {
    frame: Frame,
    /// The number of the attempt being polled when the call's attempts overlap (a hedged call's
    /// copy), 0 for the engine's current attempt, or [`RECOVERING`]. In an outer frame: the
    /// outer call's attempts left (at least 1). Written only in a tagged frame (an untagged one
    /// is a [`Frame`] to its readers), so that entering an untagged frame stores two words.
    tag: MaybeUninit<u32>,
}

/// Set in a frame's engine address when the frame begins a [`TaggedFrame`].
const TAGGED: usize = 1;
const _: () = assert!(align_of::<Engine<'static>>() > TAGGED);

/// The tag of a frame whose call's attempts are over: this is its `#[recover]` fallback (its
/// attempt is the engine's current one). No attempt has this number: attempt numbers stop at
/// 2^26 - 1.
const RECOVERING: u32 = u32::MAX;

/// The engine of `frame` (`None` for an outer frame), its tag (0 for an untagged frame) and its
/// parent.
///
/// # Safety
///
/// `frame` is non-null and current on this thread (or the parent of one): a frame is only
/// while the [`Entered`] of its [`Slot`] lives, and an engine only while that slot borrows it,
/// which outlive any walk of the frames, made inside them on this same thread. A tagged frame's
/// pointer is the `TaggedFrame`'s own (its provenance covers the tag). The engines are only
/// read, through `Cell`s; the lifetime erased in the pointer does not escape the caller.
#[allow(unsafe_code, reason = "the frames of `Slot::enter`: see Safety")]
unsafe fn read<'a>(frame: *const Frame) -> (Option<&'a Engine<'static>>, u32, *const Frame) {
    // SAFETY: per this fn's contract.
    unsafe {
        let engine = (*frame).engine;
        let tag = if engine.addr() & TAGGED == 0 {
            0
        } else {
            (*frame.cast::<TaggedFrame>()).tag.assume_init()
        };
        (
            engine.map_addr(|a| a & !TAGGED).as_ref(),
            tag,
            (*frame).parent,
        )
    }
}

thread_local! {
    /// The innermost frame, or null outside any attempt.
    static CURRENT: Cell<*const Frame> = const { Cell::new(std::ptr::null()) };
}

/// A frame made on the stack of the code that polls an attempt, current while the [`Entered`]
/// that [`Slot::enter`] gives lives:
///
/// ```text
/// let slot = Slot::of_copy(engine, number);
/// let _entered = slot.enter();
/// attempt.poll(cx)
/// ```
///
/// Not generic, so nothing is compiled per attempt type to enter a call (a closure-taking
/// `enter` is one instance per closure, i.e. per function that uses `#[retryable]`). The
/// closure-taking forms below ([`enter`] and its kin) are this around a call of `f`. The
/// lifetime is the engine's borrow: a frame is entered only while its engine lives.
#[repr(C)]
pub(crate) struct Slot<'e>(
    TaggedFrame,
    PhantomData<&'e Engine<'e>>,
    /// The call's spans and the attempt whose span to enter with the frame (feature `spans`).
    #[cfg(feature = "spans")]
    (&'e crate::engine::spans::Spans, u32),
);

impl<'e> Slot<'e> {
    /// The frame of `engine`'s current attempt: an untagged frame (its tag is never read, so
    /// never written: entering the common frame stores two words).
    #[inline]
    pub(crate) fn of(engine: &'e Engine<'_>) -> Self {
        Self::frame(
            std::ptr::from_ref(engine).cast(),
            MaybeUninit::uninit(),
            #[cfg(feature = "spans")]
            (&engine.spans, 0),
        )
    }

    /// The frame of the copy of a hedged call that is attempt `attempt` (its
    /// `context().attempt()`); 0: the engine's current attempt, as [`Slot::of`].
    #[inline]
    pub(crate) fn of_copy(engine: &'e Engine<'_>, attempt: u32) -> Self {
        debug_assert!(attempt != RECOVERING);
        if attempt == 0 {
            Self::of(engine)
        } else {
            Self::tagged(
                std::ptr::from_ref(engine).cast(),
                attempt,
                #[cfg(feature = "spans")]
                &engine.spans,
            )
        }
    }

    /// The frame of a call whose attempts are over (its `#[recover]` fallback).
    #[inline]
    pub(crate) fn recovering(engine: &'e Engine<'_>) -> Self {
        Self::tagged(
            std::ptr::from_ref(engine).cast(),
            RECOVERING,
            #[cfg(feature = "spans")]
            &engine.spans,
        )
    }

    /// `engine`'s frame (null: an outer frame), tagged with `tag` (not 0).
    #[inline]
    fn tagged(
        engine: *const Engine<'static>,
        tag: u32,
        #[cfg(feature = "spans")] spans: &'e crate::engine::spans::Spans,
    ) -> Self {
        debug_assert!(tag != 0);
        Self::frame(
            engine.map_addr(|a| a | TAGGED),
            MaybeUninit::new(tag),
            #[cfg(feature = "spans")]
            (spans, tag),
        )
    }

    // Each caller passes its own `tag` (rather than one `if` choosing between an unwritten and a
    // written tag, which the optimizer merges into an unconditional store).
    #[inline]
    fn frame(
        engine: *const Engine<'static>,
        tag: MaybeUninit<u32>,
        #[cfg(feature = "spans")] spans: (&'e crate::engine::spans::Spans, u32),
    ) -> Self {
        Slot(
            TaggedFrame {
                frame: Frame {
                    engine,
                    parent: CURRENT.get(),
                },
                tag,
            },
            PhantomData,
            #[cfg(feature = "spans")]
            spans,
        )
    }

    /// Makes this frame the current one, until the result is dropped (even by a panic): then the
    /// frame that was current when the slot was made is again. The borrow keeps the frame where
    /// it is meanwhile. A slot is made right before it is entered, so that its parent (read
    /// when it is made: the frame is then written whole before it is published, which measured
    /// 14 rather than 16 ns per call) is still the current frame; debug builds check it. (A guard
    /// leaked rather than dropped would leave a dead frame current: every use is
    /// `let _entered = slot.enter();` in the scope that polls.)
    #[inline]
    pub(crate) fn enter(&self) -> Entered<'_> {
        let parent = self.0.frame.parent;
        // The frame current when the slot was made must still be (see `Slot`).
        debug_assert!(
            std::ptr::eq(CURRENT.get(), parent),
            "a slot entered out of order"
        );
        CURRENT.set(std::ptr::from_ref(self).cast::<Frame>());
        Entered {
            parent,
            _slot: PhantomData,
            // The attempt's span too, so that the spans its code opens are its children.
            #[cfg(feature = "spans")]
            span: self.2.0.enter(self.2.1),
        }
    }
}

/// A [`Slot`] entered: puts the frame that was current back when dropped (even by a panic).
pub(crate) struct Entered<'s> {
    parent: *const Frame,
    _slot: PhantomData<&'s Slot<'s>>,
    #[cfg(feature = "spans")]
    span: Option<Box<(tracing::Dispatch, tracing::Id)>>,
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        #[cfg(feature = "spans")]
        if let Some(span) = self.span.take() {
            exit_span(span);
        }
        CURRENT.set(self.parent);
    }
}

/// Leaves an attempt's span (feature `spans`): out of line, off the path of a call without spans.
#[cfg(feature = "spans")]
#[cold]
#[inline(never)]
#[allow(clippy::boxed_local, reason = "the guard's one word, taken whole")]
fn exit_span(span: Box<(tracing::Dispatch, tracing::Id)>) {
    let (dispatch, id) = *span;
    dispatch.exit(&id);
}

/// Runs `f` with `engine` as the current call, restoring the call that was current before (even
/// if `f` panics), so that nested retrying calls see their own context; within `f`, this call's
/// `max_elapsed` deadline bounds the calls nested in it (see [`inherited_deadline`]).
#[inline]
pub(crate) fn enter<R>(engine: &Engine<'_>, f: impl FnOnce() -> R) -> R {
    let slot = Slot::of(engine);
    let _entered = slot.enter();
    f()
}

/// As [`enter`], for the copy of a hedged call that is attempt `attempt` (its
/// `context().attempt()`); 0: the engine's current attempt.
#[inline]
pub(crate) fn enter_copy<R>(engine: &Engine<'_>, attempt: u32, f: impl FnOnce() -> R) -> R {
    let slot = Slot::of_copy(engine, attempt);
    let _entered = slot.enter();
    f()
}

/// As [`enter`], for a call whose attempts are over (its `#[recover]` fallback): a retrying call
/// made in it sees only the calls enclosing this one as retrying (see [`outer_retries`]).
#[inline]
pub(crate) fn enter_recovering<R>(engine: &Engine<'_>, f: impl FnOnce() -> R) -> R {
    let slot = Slot::recovering(engine);
    let _entered = slot.enter();
    f()
}

/// Whether a call whose attempt is being polled on this thread (however deep) still has attempts
/// left after it: a call with `one_layer` made here leaves the retrying to it. Worked out from
/// the frames when asked (after a failure, with `one_layer`), so entering a call costs nothing
/// more. An outer frame ([`enter_outer`]) counts: its call has attempts left.
pub(crate) fn outer_retries() -> bool {
    outer_attempts_left().is_some()
}

/// The attempts left after the current one of the innermost call being polled on this thread
/// that will retry (an outer frame's count for a call made elsewhere), or `None` when no call
/// around this point will retry: what a request made here tells the service it calls
/// (`http::OUTER_ATTEMPTS_LEFT`). A `#[recover]` fallback's call has none left.
///
/// A `one_layer` call with attempts left makes one attempt when a call around it has attempts
/// left too (`Engine::defers_to_outer`): the retrying is that call's, so its count is the one
/// passed on. Only the outermost such `one_layer` call, with no retrying call around it,
/// retries as its policy says.
pub(crate) fn outer_attempts_left() -> Option<u32> {
    // The outermost `one_layer` call with attempts left seen so far: the answer if no call
    // around it retries.
    let mut one_layer = None;
    find_frame(|engine, tag| match engine {
        None => Some(tag),
        Some(engine) => {
            let max = engine.policy().max_attempts();
            if tag == RECOVERING || engine.attempt() >= max {
                None
            } else if engine.policy().one_layer() {
                one_layer = Some(max - engine.attempt());
                None
            } else {
                Some(max - engine.attempt())
            }
        }
    })
    .or(one_layer)
}

/// Walks the frames current on this thread, innermost first, until `f` gives a value: `f` sees
/// each frame's engine (`None` for an outer frame) and tag (0 for an untagged frame). The one
/// walk of the frames, so the one place that reads them.
fn find_frame<T>(mut f: impl FnMut(Option<&Engine<'_>>, u32) -> Option<T>) -> Option<T> {
    let mut frame = CURRENT.get();
    while !frame.is_null() {
        // SAFETY: a current frame or its parent (see `read`), walked while the innermost one's
        // `Entered` lives (inside the poll or the `enter` that made it); the engine is lent to `f` only for the call (the
        // reference and the engine's erased lifetime are higher-ranked in `f`'s signature:
        // neither can escape into `T`).
        #[allow(unsafe_code, reason = "the frames of `Slot::enter`: see SAFETY")]
        let (engine, tag, parent) = unsafe { read(frame) };
        if let Some(found) = f(engine, tag) {
            return Some(found);
        }
        frame = parent;
    }
    None
}

/// Runs `f` inside an outer frame: a call made elsewhere that has `attempts_left` attempts left
/// after the one that sent the request being served (see the [module](self)). With 0 it runs `f`
/// as it is: a caller on its last attempt leaves the retrying to the calls made here.
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP server side, and tests")
)]
#[inline]
pub(crate) fn enter_outer<R>(attempts_left: u32, f: impl FnOnce() -> R) -> R {
    // A call made elsewhere: no span of ours.
    #[cfg(feature = "spans")]
    static NO_SPANS: crate::engine::spans::Spans = crate::engine::spans::Spans::NONE;
    if attempts_left == 0 {
        return f();
    }
    let slot = Slot::tagged(
        std::ptr::null(),
        attempts_left,
        #[cfg(feature = "spans")]
        &NO_SPANS,
    );
    let _entered = slot.enter();
    f()
}

/// The earliest `max_elapsed` deadline of the calls whose attempts are being polled on this
/// thread: a retrying call nested in another's attempt may not outlive it.
#[inline]
pub(crate) fn inherited_deadline() -> Option<Instant> {
    if CURRENT.get().is_null() {
        return None;
    }
    earliest_enclosing()
}

/// The earliest deadline of the current call and the calls it is nested in.
fn earliest_enclosing() -> Option<Instant> {
    let mut earliest: Option<Instant> = None;
    find_frame(|engine, _| {
        // An outer frame has no engine: its call's deadline is its own process's.
        if let Some(own) = engine.and_then(Engine::deadline) {
            earliest = Some(earliest.map_or(own, |e| e.min(own)));
        }
        None::<()>
    });
    earliest
}

/// Runs `f` with the engine of the innermost attempt being polled on this thread, if any, and
/// the attempt's number when it is a hedged call's copy (else 0). Outer frames are passed over:
/// they have no engine here.
pub(crate) fn with_current<T>(f: impl FnOnce(&Engine<'_>, u32) -> T) -> Option<T> {
    let mut f = Some(f);
    find_frame(|engine, tag| {
        let engine = engine?;
        let f = f.take()?;
        Some(f(engine, if tag == RECOVERING { 0 } else { tag }))
    })
}

/// Runs `f` with the spans of the innermost attempt being polled on this thread (feature
/// `spans`), the attempt's tag for [`Spans::record_attempt`](crate::engine::spans::Spans) (0:
/// the one begun last) and its number: how a driver's code that runs inside the attempt (its
/// request's copy, its transport) records its protocol's attributes.
#[cfg(all(
    feature = "spans",
    any(
        all(feature = "tower", feature = "http"),
        feature = "reqwest-middleware",
        feature = "tonic"
    )
))]
pub(crate) fn with_spans(f: impl FnOnce(&crate::engine::spans::Spans, u32, u32)) {
    with_current(|engine, tag| {
        let number = if tag == 0 { engine.attempt() } else { tag };
        f(&engine.spans, tag, number);
    });
}

/// What an attempt knows about its call: a snapshot taken by [`context()`] (or handed to an
/// `on_retry` callback).
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     use reattempt::{RetryPolicy, context};
///
///     let policy = RetryPolicy::builder().delay(std::time::Duration::from_millis(1)).build().unwrap();
///     let mut keys = vec![];
///     let out: Result<u32, std::io::Error> = policy
///         .retry(|| {
///             let ctx = context().expect("inside an attempt");
///             keys.push(ctx.idempotency_key());
///             async move {
///                 if ctx.attempt() < 3 { Err(std::io::ErrorKind::TimedOut.into()) } else { Ok(ctx.attempt()) }
///             }
///         })
///         .await;
///     assert_eq!(out.unwrap(), 3);
///     assert!(keys.iter().all(|k| *k == keys[0]));
///     assert!(context().is_none());
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryContext {
    attempt: u32,
    max_attempts: u32,
    start: Instant,
    key: IdempotencyKey,
    deadline: Option<Instant>,
}

impl RetryContext {
    /// The context of the engine's current attempt.
    #[cfg(test)]
    pub(crate) fn of(engine: &Engine<'_>) -> Self {
        Self::of_copy(engine, 0)
    }

    /// The context of attempt `attempt` of a hedged call (0: the engine's current attempt).
    pub(crate) fn of_copy(engine: &Engine<'_>, attempt: u32) -> Self {
        RetryContext {
            attempt: if attempt == 0 {
                engine.attempt()
            } else {
                attempt
            },
            max_attempts: engine.policy().max_attempts(),
            start: engine.start_or(Instant::now),
            key: engine.idempotency_key(),
            deadline: earliest_limit(),
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

    /// The time this attempt has left, when something limits it: its own `timeout`, the call's
    /// `max_elapsed`, and those of the retrying calls it is nested in (the earliest of them;
    /// `Duration::ZERO` once passed). `None` when nothing does. Read when the context was taken.
    /// In a hedged call, a copy sees the limit of the copy started last.
    ///
    /// For a server that can bound its own work: send it, so that a timed-out attempt stops there
    /// too (gRPC's `grpc-timeout` is sent so by the gRPC layer; for Postgres, see
    /// `reattempt::sqlx::postgres_timeouts`).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{RetryPolicy, context};
    ///
    ///     let policy = RetryPolicy::builder().timeout(Duration::from_millis(200)).build().unwrap();
    ///     let left = policy
    ///         .retry(|| async {
    ///             tokio::time::sleep(Duration::from_millis(50)).await;
    ///             Ok::<_, std::io::Error>(context().unwrap().remaining())
    ///         })
    ///         .await
    ///         .unwrap();
    ///     assert_eq!(left, Some(Duration::from_millis(150)));
    ///     let untimed = RetryPolicy::builder().build().unwrap();
    ///     let left = untimed.retry(|| async { Ok::<_, std::io::Error>(context().unwrap().remaining()) });
    ///     assert_eq!(left.await.unwrap(), None);
    /// }
    /// ```
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// The earliest limit on the attempt being polled on this thread: the time limits of its own
/// attempt and of the attempts it is nested in, and the `max_elapsed` deadlines of their calls.
/// A call whose attempts are over (its `#[recover]` fallback) has no attempt limit.
fn earliest_limit() -> Option<Instant> {
    let mut earliest: Option<Instant> = None;
    find_frame(|engine, tag| {
        if let Some(engine) = engine {
            let attempt = if tag == RECOVERING {
                None
            } else {
                engine.attempt_deadline()
            };
            for limit in [engine.deadline(), attempt].into_iter().flatten() {
                earliest = Some(earliest.map_or(limit, |e| e.min(limit)));
            }
        }
        None::<()>
    });
    earliest
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
/// assert!(reattempt::context().is_none());
/// ```
pub fn context() -> Option<RetryContext> {
    with_current(RetryContext::of_copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryPolicy;

    #[test]
    fn context_is_set_only_inside_enter_and_nests() {
        let p = RetryPolicy::default();
        let mut outer = Engine::new(&p);
        outer.begin(false, Instant::now, None);
        let mut inner = Engine::new(&p);
        inner.begin(false, Instant::now, None);
        inner.begin(false, Instant::now, None);
        assert!(context().is_none());
        enter(&outer, || {
            assert_eq!(context().unwrap().attempt(), 1);
            enter(&inner, || assert_eq!(context().unwrap().attempt(), 2));
            assert_eq!(context().unwrap().attempt(), 1);
        });
        assert!(context().is_none());
    }

    #[test]
    fn a_copy_sees_its_own_attempt_and_the_calls_key() {
        let p = RetryPolicy::default();
        let mut e = Engine::new(&p);
        e.begin(false, Instant::now, None);
        e.begin(false, Instant::now, None);
        let first = enter_copy(&e, 1, || context().unwrap());
        let second = enter_copy(&e, 2, || context().unwrap());
        assert_eq!((first.attempt(), second.attempt()), (1, 2));
        assert_eq!(first.idempotency_key(), second.idempotency_key());
        enter_copy(&e, 1, || {
            enter(&e, || {
                assert_eq!(
                    context().unwrap().attempt(),
                    2,
                    "a plain enter: the engine's"
                );
            });
            assert_eq!(context().unwrap().attempt(), 1, "restored");
        });
    }

    #[test]
    fn a_calls_frame_is_two_words_and_a_tagged_one_says_the_rest() {
        // Entering an attempt of a call that runs one at a time stores its engine and the parent.
        assert_eq!(size_of::<Frame>(), 2 * size_of::<usize>());
        let p = RetryPolicy::default();
        let mut e = Engine::new(&p);
        e.begin(false, Instant::now, None);
        e.begin(false, Instant::now, None);
        enter(&e, || {
            enter_copy(&e, 1, || {
                enter_recovering(&e, || {
                    assert_eq!(context().unwrap().attempt(), 2, "a fallback: the engine's");
                });
                enter_copy(&e, 0, || {
                    assert_eq!(context().unwrap().attempt(), 2, "copy 0: the engine's");
                });
                assert_eq!(context().unwrap().attempt(), 1);
            });
            assert_eq!(context().unwrap().attempt(), 2);
        });
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
        enter(&outer, || {
            assert!(outer_retries(), "attempt 1 of 3");
            enter(&middle, || {
                assert!(outer_retries(), "the outer call still has attempts left");
            });
            enter_recovering(&outer, || {
                assert!(
                    outer_retries(),
                    "a fallback does not hide the calls around it"
                );
            });
        });
        outer.begin(false, Instant::now, None);
        outer.begin(false, Instant::now, None);
        enter(&outer, || {
            assert!(!outer_retries(), "attempt 3 of 3: the last");
            enter(&middle, || {
                assert!(!outer_retries(), "max_attempts = 1: none");
            });
        });
        enter_recovering(&Engine::new(&three), || {
            assert!(!outer_retries(), "a fallback's attempts are over");
        });
    }

    #[test]
    fn an_outer_frame_says_a_caller_elsewhere_retries_and_has_no_context() {
        let three = RetryPolicy::builder().max_attempts(3).build().unwrap();
        assert_eq!(outer_attempts_left(), None);
        enter_outer(0, || {
            assert!(!outer_retries(), "a caller on its last attempt: no frame");
            assert_eq!(outer_attempts_left(), None);
        });
        enter_outer(2, || {
            assert!(outer_retries(), "the caller has 2 attempts left");
            assert_eq!(outer_attempts_left(), Some(2));
            assert!(context().is_none(), "no attempt of this process");
            assert_eq!(inherited_deadline(), None, "no deadline of this process");
            let mut inner = Engine::new(&three);
            inner.begin(false, Instant::now, None);
            enter(&inner, || {
                assert_eq!(context().unwrap().attempt(), 1);
                assert_eq!(outer_attempts_left(), Some(2), "the call's own: 3 − 1");
            });
            inner.begin(false, Instant::now, None);
            inner.begin(false, Instant::now, None);
            enter(&inner, || {
                assert_eq!(
                    outer_attempts_left(),
                    Some(2),
                    "its last attempt: the caller's, passed on"
                );
            });
            enter_recovering(&inner, || assert_eq!(outer_attempts_left(), Some(2)));
        });
        assert!(!outer_retries(), "restored");
    }

    #[test]
    fn a_one_layer_call_that_defers_passes_its_callers_attempts_left_on() {
        let b = |n: u32, one_layer: bool| {
            RetryPolicy::builder()
                .max_attempts(n)
                .one_layer(one_layer)
                .build()
                .unwrap()
        };
        let (three, five, four_one_layer) = (b(3, false), b(5, true), b(4, true));
        let mut outer = Engine::new(&three);
        let mut inner = Engine::new(&five);
        let mut innermost = Engine::new(&four_one_layer);
        outer.begin(false, Instant::now, None);
        inner.begin(false, Instant::now, None);
        innermost.begin(false, Instant::now, None);
        enter(&outer, || {
            enter(&inner, || {
                assert_eq!(
                    outer_attempts_left(),
                    Some(2),
                    "the one_layer call makes one attempt: its caller's 3 − 1, not its own 5 − 1"
                );
                enter(&innermost, || assert_eq!(outer_attempts_left(), Some(2)));
            });
        });
        // Alone, a one_layer call retries as its policy says: its own count.
        enter(&inner, || {
            assert_eq!(outer_attempts_left(), Some(4));
            enter(&innermost, || {
                assert_eq!(
                    outer_attempts_left(),
                    Some(4),
                    "the outermost one_layer call retries"
                );
            });
        });
        enter_outer(1, || {
            enter(&inner, || {
                assert_eq!(outer_attempts_left(), Some(1), "a caller elsewhere");
            });
        });
        // On the caller's last attempt, the one_layer call retries: its own count.
        outer.begin(false, Instant::now, None);
        outer.begin(false, Instant::now, None);
        enter(&outer, || {
            enter(&inner, || assert_eq!(outer_attempts_left(), Some(4)));
        });
    }

    #[test]
    fn an_outer_frame_inside_an_attempt_shows_the_attempt_through() {
        let ms = Duration::from_millis(1);
        let p = RetryPolicy::builder()
            .max_attempts(3)
            .max_elapsed(100 * ms)
            .build()
            .unwrap();
        let t0 = Instant::now();
        let mut e = Engine::new(&p);
        e.begin(false, || t0, None);
        e.begin(false, || t0, None);
        e.begin(false, || t0, None);
        enter(&e, || {
            assert_eq!(outer_attempts_left(), None, "the last of 3");
            enter_outer(1, || {
                assert_eq!(context().unwrap().attempt(), 3, "the enclosing attempt's");
                assert_eq!(inherited_deadline(), Some(t0 + 100 * ms));
                assert_eq!(outer_attempts_left(), Some(1));
            });
        });
        let r = std::panic::catch_unwind(|| enter_outer(5, || panic!("boom")));
        assert!(r.is_err());
        assert!(!outer_retries(), "restored after a panic");
    }

    #[test]
    fn enter_restores_on_panic() {
        let p = RetryPolicy::default();
        let e = Engine::new(&p);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            enter(&e, || panic!("boom"));
        }));
        assert!(r.is_err());
        assert!(context().is_none());
    }

    #[test]
    fn the_inherited_deadline_is_the_earliest_of_the_enclosing_calls() {
        let ms = Duration::from_millis(1);
        let (long, short) = (
            RetryPolicy::builder()
                .max_elapsed(1000 * ms)
                .build()
                .unwrap(),
            RetryPolicy::builder()
                .max_elapsed(100 * ms)
                .build()
                .unwrap(),
        );
        let untimed = RetryPolicy::default();
        let t0 = Instant::now();
        let mut outer = Engine::new(&long);
        outer.begin(false, || t0, None);
        let mut middle = Engine::new(&short);
        middle.begin(false, || t0 + 10 * ms, None);
        let mut inner = Engine::new(&untimed);
        inner.begin(false, Instant::now, None);
        assert_eq!(inherited_deadline(), None);
        enter(&outer, || {
            assert_eq!(inherited_deadline(), Some(t0 + 1000 * ms));
            enter(&middle, || {
                enter(&inner, || {
                    assert_eq!(inherited_deadline(), Some(t0 + 110 * ms));
                });
            });
            assert_eq!(inherited_deadline(), Some(t0 + 1000 * ms));
        });
        assert_eq!(inherited_deadline(), None);
    }

    /// A slot's parent is read when it is made, so a slot must be entered before another is
    /// made (found by review: two slots made before either was entered lost the outer frame, and
    /// the types allowed it). Debug builds catch a slot entered out of order.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a slot entered out of order")]
    fn a_slot_entered_after_another_was_made_is_caught() {
        let p = RetryPolicy::default();
        let (outer, inner) = (Engine::new(&p), Engine::new(&p));
        let a = Slot::of(&outer);
        let b = Slot::of(&inner);
        let _entered_a = a.enter();
        let _entered_b = b.enter();
    }

    #[test]
    fn slots_made_and_entered_in_turn_chain() {
        let ms = Duration::from_millis(1);
        let p = RetryPolicy::builder()
            .max_elapsed(100 * ms)
            .build()
            .unwrap();
        let untimed = RetryPolicy::default();
        let t0 = Instant::now();
        let mut outer = Engine::new(&p);
        outer.begin(false, || t0, None);
        let mut inner = Engine::new(&untimed);
        inner.begin(false, Instant::now, None);
        let a = Slot::of(&outer);
        let entered_a = a.enter();
        let b = Slot::of(&inner);
        let entered_b = b.enter();
        assert_eq!(inherited_deadline(), Some(t0 + 100 * ms));
        drop(entered_b);
        assert_eq!(context().unwrap().attempt(), 1);
        drop(entered_a);
        assert!(context().is_none());
    }
}
