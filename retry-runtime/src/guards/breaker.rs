//! The circuit breaker: stop calling a dependency that is down, and probe it before trusting it
//! again. closed → open when failures pile up → half-open after `reset_timeout`, letting a few
//! probes through → closed if they all succeed, open again if one fails.
//!
//! A closed breaker takes no lock: its phase, epoch and counters sit in one atomic word. A call
//! through it reads that word once to be let through; in the consecutive mode a success reads it
//! once more and writes only to reset a failure count that is not zero, a failure makes one
//! compare-and-swap; in the rate mode each outcome takes one compare-and-swap (its place in the
//! window), plus a bit flip and a count update only when the outcome differs from the one it
//! pushes out of the window. The rare transitions, and the half-open phase, take a mutex (never
//! held across an await, and only for a few comparisons).
//!
//! Permits are plain data (no borrow of the breaker), so the breaker can be named afresh at each
//! use, and one word, shaped as the state word they expect: a success through a closed breaker
//! that counted nothing meanwhile is one load and one comparison with the permit. A permit carries
//! the breaker's epoch, so outcomes from before a transition are ignored
//! (the epoch counts transitions modulo 2^29: a permit would have to be held across 536 million
//! transitions to be mistaken for a current one). A probe that never reports back (its call was
//! cancelled) holds its slot for `reset_timeout`, after which another probe may take it; the
//! successes already counted stay counted.
//!
//! Under concurrent calls, each outcome counts exactly once and is judged against the counters as
//! they stand after it: the failure that trips the breaker opens it even if another thread records
//! a success meanwhile (that success, from before the transition, is then ignored, as it would be
//! one after the other). In the rate mode, an outcome whose recording is still under way when the
//! window comes round to its slot again (`sliding_window` later calls) may stay in the window one
//! round longer than it would one call at a time. The failure count matches the outcomes the
//! window holds, with one exception that needs a thread stalled for a whole open → half-open →
//! closed cycle (at least `reset_timeout`) between taking its slot and writing its bit: its late
//! bit is not counted (its epoch is gone), so until the next transition the count may be one off
//! and the breaker trip one failure early or late.

use std::sync::{OnceLock, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::BreakerOpen;
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering, now};

/// Where a [`CircuitBreaker`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls pass; failures are counted.
    Closed,
    /// Calls are rejected with [`BreakerOpen`] until `reset_timeout` has passed.
    Open,
    /// A few probe calls pass; their outcome closes or reopens the breaker.
    HalfOpen,
}

impl std::fmt::Display for BreakerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        })
    }
}

/// Leave to make one call through a breaker; hand it back once with [`CircuitBreaker::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "record the call's outcome with CircuitBreaker::record"]
pub struct Permit {
    /// One word, shaped as the state word: through a closed breaker, the word of that epoch,
    /// closed, with nothing counted (`pack(epoch, CLOSED)`): a success finds the breaker as it
    /// left it when the state word equals the permit; a half-open probe's is
    /// `pack(epoch, HALF_OPEN)` with the probe's number (from 1) where `full` and `low` are.
    word: u64,
}

impl Permit {
    /// What [`Admission::Rejected`](crate::__private::Admission::Rejected) holds: no permit
    /// has the phase 3, which no state word has either.
    pub(crate) const REJECTED: Permit = Permit { word: 3 };

    /// What [`Admission::NotAsked`](crate::__private::Admission::NotAsked) holds.
    pub(crate) const NOT_ASKED: Permit = Permit { word: 3 | FULL };

    /// Whether this is a permit the breaker gave (not `REJECTED` or `NOT_ASKED`).
    pub(crate) fn is_permit(self) -> bool {
        phase(self.word) != 3
    }

    /// The permit of a closed `word`: its epoch and phase, without `full` and `low` (below
    /// `FULL` all: one `and` with a 32-bit immediate).
    fn closed(word: u64) -> Self {
        debug_assert_eq!(phase(word), CLOSED);
        Permit {
            word: word & (FULL - 1),
        }
    }

    fn epoch(self) -> u64 {
        epoch(self.word)
    }

    fn probe(self) -> u64 {
        self.word >> PROBE_SHIFT
    }
}

/// Parts per million: a failure rate is compared exactly, in integers.
const PPM: u64 = 1_000_000;

// The state word: | low: 32 bits | full: 1 bit | epoch: 29 bits | phase: 2 bits |. While closed,
// `low` is the count of failures in a row (consecutive mode) or the next slot of the window plus
// one (rate mode: never 0, so that a rate-mode word never equals a closed permit, and `record`'s
// common case needs no test of the mode), and `full` says the window has gone round once (rate
// mode). Only a thread holding the mutex changes the epoch or the phase; without it, only `low`
// and `full` of a closed word change. A probe's permit carries its number where `full` and `low`
// are (from `PROBE_SHIFT` up), which a half-open word leaves at 0. The phase sits lowest and the
// epoch below `full`, so that the common case takes no 64-bit constant: the closed test is a
// test of the low byte, and a closed permit the word's low 31 bits.
const LOW_SHIFT: u32 = 32;
const LOW: u64 = (u32::MAX as u64) << LOW_SHIFT;
const FULL: u64 = 1 << 31;
const PROBE_SHIFT: u32 = 31;
/// The largest probe number: a permit holds it in the 33 bits from `PROBE_SHIFT`.
const PROBE_MAX: u64 = (1 << 33) - 1;
const PHASE_MASK: u64 = 0b11;
const EPOCH_SHIFT: u32 = 2;
const EPOCH_MASK: u64 = (1 << 29) - 1;
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
/// A count of failures in `Window::failures` (its low half).
const COUNT: u64 = u32::MAX as u64;

fn phase(word: u64) -> u64 {
    word & PHASE_MASK
}

fn epoch(word: u64) -> u64 {
    (word >> EPOCH_SHIFT) & EPOCH_MASK
}

fn pack(epoch: u64, phase: u64) -> u64 {
    (epoch << EPOCH_SHIFT) | phase
}

/// `low` of a state word.
fn low(word: u64) -> u64 {
    word >> LOW_SHIFT
}

/// `word` with `low` set to `n` (below 2^32).
fn with_low(word: u64, n: u64) -> u64 {
    (word & !LOW) | (n << LOW_SHIFT)
}

fn state_of(word: u64) -> BreakerState {
    match phase(word) {
        CLOSED => BreakerState::Closed,
        OPEN => BreakerState::Open,
        _ => BreakerState::HalfOpen,
    }
}

/// When the breaker trips.
#[derive(Debug)]
enum Trip {
    /// After this many failures in a row.
    Consecutive(u32),
    /// When, over the last `window` calls (and at least `minimum_calls`), the share of failures
    /// reaches `rate_ppm` millionths.
    Rate {
        rate_ppm: u32,
        window: u32,
        minimum_calls: u32,
        outcomes: Window,
    },
}

/// The rate mode's last outcomes (bit set = failure), one bit per slot of the window, and their
/// count of failures.
struct Window {
    /// The bits, in chunks allocated at their first use (a huge window is not allocated up front).
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    chunk_words: usize,
    /// | epoch: 32 bits | failures in the window: 32 bits |: the epoch makes an outcome recorded
    /// after the breaker left the phase it was admitted in miss the count.
    failures: AtomicU64,
}

impl Window {
    fn new(window: u32) -> Self {
        let words = (window as usize).div_ceil(64);
        let chunk_words = words.min(1 << 16);
        Window {
            chunks: (0..words.div_ceil(chunk_words))
                .map(|_| OnceLock::new())
                .collect(),
            chunk_words,
            failures: AtomicU64::new(0),
        }
    }

    /// The word holding `slot`'s bit, and the bit.
    fn cell(&self, slot: u32) -> (&AtomicU64, u64) {
        let word = slot as usize / 64;
        let chunk = self.chunks[word / self.chunk_words]
            .get_or_init(|| (0..self.chunk_words).map(|_| AtomicU64::new(0)).collect());
        (&chunk[word % self.chunk_words], 1 << (slot % 64))
    }
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("failures", &(self.failures.load(Ordering::Relaxed) & COUNT))
            .finish_non_exhaustive()
    }
}

/// What only the rare transitions and the half-open phase touch, behind the mutex.
#[derive(Debug, Default)]
struct Slow {
    /// While open: rejecting until then; `None` when `reset_timeout` reaches past what the clock
    /// can represent: open until the process restarts.
    until: Option<Instant>,
    /// While half-open: probes of this phase that succeeded.
    succeeded: u32,
    /// The last probe number handed out.
    last_probe: u64,
    /// The probes not yet reported, oldest first: (number, when its slot is freed).
    out: Vec<(u64, Option<Instant>)>,
}

/// A circuit breaker shared by every call that names it (a `static`, a `LazyLock`, a field).
///
/// The state machine, which the model test `tests/breaker_model.rs` checks step by step:
///
/// - **Closed**: every call is let through and its outcome counted. With `failure_threshold`, that
///   many failures in a row open the breaker; with `failure_rate`, once `minimum_calls` of the last
///   `sliding_window` calls are in, a share of failures at or above the rate (compared exactly, the
///   rate taken to the millionth) opens it.
/// - **Open**: every call is rejected with [`BreakerOpen`] until `reset_timeout` has passed since it
///   opened; from then on it reads half-open. A `reset_timeout` beyond what the clock can
///   represent (`Duration::MAX`, `"300000000000y"`) keeps it open until the process restarts.
/// - **Half-open**: probes are let through while the probes that succeeded plus the probes still
///   out are fewer than `half_open_probes`. When that many probes have succeeded the breaker
///   closes; a probe that fails opens it again. A probe out for `reset_timeout` (its call was
///   cancelled, or hangs) stops holding its slot, so another probe may go; the successes already
///   counted stay counted, and a probe that reports late, while the breaker is still half-open,
///   still counts.
/// - An outcome recorded under a permit from before the last transition is ignored, and
///   [`state`](Self::state) only reads: it never changes what happens next.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use std::time::Duration;
///     use reattempt::{BreakerState, CircuitBreaker};
///
///     let breaker = CircuitBreaker::builder()
///         .failure_threshold(2)
///         .reset_timeout(Duration::from_secs(30))
///         .build()
///         .unwrap();
///     for _ in 0..2 {
///         let permit = breaker.try_acquire().unwrap();
///         breaker.record(permit, false); // a failure
///     }
///     assert_eq!(breaker.state(), BreakerState::Open);
///     assert!(breaker.try_acquire().is_err());
///     tokio::time::sleep(Duration::from_secs(30)).await;
///     let probe = breaker.try_acquire().unwrap();
///     assert_eq!(breaker.state(), BreakerState::HalfOpen);
///     breaker.record(probe, true);
///     assert_eq!(breaker.state(), BreakerState::Closed);
/// }
/// ```
#[derive(Debug)]
pub struct CircuitBreaker {
    name: &'static str,
    trip: Trip,
    reset_timeout: Duration,
    half_open_probes: u32,
    /// The state word (see `LOW` and the constants beside it).
    state: AtomicU64,
    slow: Mutex<Slow>,
}

impl CircuitBreaker {
    /// A builder with the defaults: open after 5 failures in a row, probe after 30 s, one probe.
    pub fn builder() -> CircuitBreakerBuilder {
        CircuitBreakerBuilder::default()
    }

    /// The breaker's state now (an open breaker whose `reset_timeout` has passed reads
    /// half-open). Only reads: a health check calling it changes nothing.
    pub fn state(&self) -> BreakerState {
        if phase(self.state.load(Ordering::Acquire)) == CLOSED {
            return BreakerState::Closed;
        }
        let slow = self.lock();
        let word = self.state.load(Ordering::Acquire);
        match phase(word) {
            OPEN if slow.until.is_some_and(|u| now() >= u) => BreakerState::HalfOpen,
            _ => state_of(word),
        }
    }

    /// The name given to the builder (in events).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Leave to make one call, or [`BreakerOpen`] while the breaker is open (or all of the
    /// half-open breaker's probe slots are taken).
    ///
    /// # Errors
    /// [`BreakerOpen`] when the call must not be made.
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit, BreakerOpen> {
        let word = self.state.load(Ordering::Acquire);
        if phase(word) == CLOSED {
            // The common case: one atomic load, no lock, no clock read.
            return Ok(Permit::closed(word));
        }
        self.acquire_slow()
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow(&self) -> Result<Permit, BreakerOpen> {
        let mut slow = self.lock();
        let mut word = self.state.load(Ordering::Acquire);
        if phase(word) == CLOSED {
            return Ok(Permit::closed(word));
        }
        let now = now();
        if phase(word) == OPEN {
            if slow.until.is_none_or(|until| now < until) {
                return Err(BreakerOpen::new());
            }
            word = self.transition(&mut slow, word, HALF_OPEN);
        }
        let live = slow
            .out
            .iter()
            .filter(|(_, frees)| frees.is_none_or(|f| now < f))
            .count();
        let taken = u64::from(slow.succeeded) + live as u64;
        if taken < u64::from(self.half_open_probes) {
            // Numbered from 1 within the phase, modulo 2^33 (a permit carries the number in 33
            // bits): after a wrap, a number still out is skipped, so the probes out stay distinct.
            let probe = loop {
                slow.last_probe = slow.last_probe % PROBE_MAX + 1;
                let n = slow.last_probe;
                if !slow.out.iter().any(|(out, _)| *out == n) {
                    break n;
                }
            };
            slow.out.push((probe, now.checked_add(self.reset_timeout)));
            Ok(Permit {
                word: pack(epoch(word), HALF_OPEN) | (probe << PROBE_SHIFT),
            })
        } else {
            Err(BreakerOpen::new())
        }
    }

    /// Records how the call made under `permit` went (`true`: it succeeded). Record each permit
    /// once; a permit from before the breaker's last transition is ignored.
    #[inline]
    pub fn record(&self, permit: Permit, succeeded: bool) {
        let word = self.state.load(Ordering::Acquire);
        // The common case, inline: a success through a breaker still closed in the permit's
        // epoch with no failure in a row to forget (consecutive mode). The word is then exactly
        // the permit: one load, one comparison. (A rate-mode word never equals a permit: its
        // `low` is never 0; a probe's permit has its number where a half-open word has 0.)
        if succeeded && word == permit.word {
            return;
        }
        self.record_outcome(permit, succeeded);
    }

    /// [`record`](Self::record), past its common case (which it reads the state word again for:
    /// the outcome is judged against the state as it stands then).
    #[cold]
    #[inline(never)]
    fn record_outcome(&self, permit: Permit, succeeded: bool) {
        let word = self.state.load(Ordering::Acquire);
        if !permit.is_permit() || epoch(word) != permit.epoch() {
            return; // the breaker moved on since this call was admitted
        }
        match phase(word) {
            CLOSED => match self.trip {
                // The common case: a success with no failure to forget reads one word, no more.
                Trip::Consecutive(_) if succeeded && low(word) == 0 => {}
                Trip::Consecutive(threshold) => {
                    self.count_in_a_row(word, threshold, succeeded);
                }
                Trip::Rate { .. } => self.count_in_window(word, succeeded),
            },
            HALF_OPEN => self.record_probe(permit, succeeded),
            _ => {}
        }
    }

    /// Consecutive mode, closed: a failure adds one to the count, a success zeroes it.
    fn count_in_a_row(&self, mut word: u64, threshold: u32, succeeded: bool) {
        let admitted = epoch(word);
        loop {
            let failures = low(word);
            let counted = match (succeeded, failures) {
                (true, 0) => return,
                (true, _) => 0,
                (false, COUNT) => COUNT,
                (false, n) => n + 1,
            };
            match self.state.compare_exchange(
                word,
                with_low(word, counted),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if counted >= u64::from(threshold) {
                        self.trip(admitted);
                    }
                    return;
                }
                Err(now) => {
                    word = now;
                    if phase(word) != CLOSED || epoch(word) != admitted {
                        return;
                    }
                }
            }
        }
    }

    /// Rate mode, closed: takes the window's next slot, puts the outcome in it and adjusts the
    /// count of failures by what changed.
    fn count_in_window(&self, mut word: u64, succeeded: bool) {
        let Trip::Rate {
            rate_ppm,
            window,
            minimum_calls,
            ref outcomes,
        } = self.trip
        else {
            return;
        };
        let admitted = epoch(word);
        // One compare-and-swap: the slot, and whether the window had gone round (its slots then
        // hold this phase's outcomes; before, whatever they hold is not counted).
        let (slot, was_full) = loop {
            // `low` is the next slot plus one.
            let slot = low(word) - 1;
            let next = if slot + 1 == u64::from(window) {
                with_low(word, 1) | FULL
            } else {
                with_low(word, slot + 2)
            };
            match self
                .state
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break (slot, word & FULL != 0),
                Err(now) => {
                    word = now;
                    if phase(word) != CLOSED || epoch(word) != admitted {
                        return;
                    }
                }
            }
        };
        #[allow(
            clippy::cast_possible_truncation,
            reason = "a slot is below the u32 window"
        )]
        let (cell, bit) = outcomes.cell(slot as u32);
        let failed = !succeeded;
        // The bit is written only when it changes; the old one is read by the write itself, so
        // that the count follows the bits exactly even when two calls race for one slot.
        let old = if (cell.load(Ordering::Acquire) & bit != 0) == failed {
            failed
        } else if failed {
            cell.fetch_or(bit, Ordering::AcqRel) & bit != 0
        } else {
            cell.fetch_and(!bit, Ordering::AcqRel) & bit != 0
        };
        let evicted = was_full && old;
        if was_full && evicted == failed {
            return; // the window's count is what it was, and was judged then
        }
        // The count is updated (or, while the window fills, re-read) by a read-modify-write: of
        // two outcomes recorded at once, the later one in the count's order then sees the other's
        // slot taken, and judges the window as it stands after both.
        let mut count = outcomes.failures.load(Ordering::Acquire);
        loop {
            if count >> 32 != admitted {
                return; // the breaker left this phase: the count is a new one's
            }
            let failures = match (failed, evicted) {
                (true, false) => ((count & COUNT) + 1).min(u64::from(window)),
                (false, true) => (count & COUNT).saturating_sub(1),
                _ => count & COUNT,
            };
            let counted = (count & !COUNT) | failures;
            match outcomes.failures.compare_exchange(
                count,
                counted,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    count = counted;
                    break;
                }
                Err(now) => count = now,
            }
        }
        let word = self.state.load(Ordering::Acquire);
        if phase(word) != CLOSED || epoch(word) != admitted {
            return;
        }
        let filled = if word & FULL != 0 {
            u64::from(window)
        } else {
            low(word) - 1
        };
        if filled >= u64::from(minimum_calls)
            && (count & COUNT) * PPM >= u64::from(rate_ppm) * filled
        {
            self.trip(admitted);
        }
    }

    /// Opens a closed breaker whose counters said so under `admitted`, unless it already left
    /// that phase (another failure tripped it first).
    #[cold]
    #[inline(never)]
    fn trip(&self, admitted: u64) {
        let mut slow = self.lock();
        let word = self.state.load(Ordering::Acquire);
        if phase(word) == CLOSED && epoch(word) == admitted {
            self.open(&mut slow, word);
        }
    }

    #[cold]
    #[inline(never)]
    fn record_probe(&self, permit: Permit, succeeded: bool) {
        let mut slow = self.lock();
        let word = self.state.load(Ordering::Acquire);
        if phase(word) != HALF_OPEN || epoch(word) != permit.epoch() {
            return;
        }
        // Only a probe not yet reported counts (late or not).
        let Some(i) = slow.out.iter().position(|(n, _)| *n == permit.probe()) else {
            return;
        };
        slow.out.remove(i);
        if succeeded {
            slow.succeeded = slow.succeeded.saturating_add(1);
            if slow.succeeded >= self.half_open_probes {
                self.transition(&mut slow, word, CLOSED);
            }
        } else {
            self.open(&mut slow, word);
        }
    }

    /// Gives back a permit whose call was never made (no time remained to make it): no outcome
    /// is counted, and a half-open probe slot it held goes back to other callers at once rather
    /// than after `reset_timeout`. Like [`record`](Self::record), use each permit once.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::{BreakerState, CircuitBreaker};
    ///
    ///     let breaker = CircuitBreaker::builder()
    ///         .failure_threshold(1)
    ///         .reset_timeout(Duration::from_secs(30))
    ///         .half_open_probes(1)
    ///         .build()
    ///         .unwrap();
    ///     breaker.record(breaker.try_acquire().unwrap(), false);
    ///     tokio::time::advance(Duration::from_secs(30)).await;
    ///     let probe = breaker.try_acquire().unwrap();
    ///     assert!(breaker.try_acquire().is_err(), "the one probe slot is taken");
    ///     breaker.release(probe);
    ///     assert!(breaker.try_acquire().is_ok(), "and free again");
    ///     assert_eq!(breaker.state(), BreakerState::HalfOpen);
    /// }
    /// ```
    pub fn release(&self, permit: Permit) {
        let word = self.state.load(Ordering::Acquire);
        if phase(word) != HALF_OPEN || epoch(word) != permit.epoch() || !permit.is_permit() {
            return; // nothing held: a closed breaker counts no slots
        }
        let mut slow = self.lock();
        let word = self.state.load(Ordering::Acquire);
        if phase(word) == HALF_OPEN
            && epoch(word) == permit.epoch()
            && let Some(i) = slow.out.iter().position(|(n, _)| *n == permit.probe())
        {
            slow.out.remove(i);
        }
    }

    /// Opens the breaker until `reset_timeout` from now (the clock is read only here, so a closed
    /// breaker's success reads none); a deadline past the clock's range means never.
    fn open(&self, slow: &mut Slow, word: u64) {
        let until = now().checked_add(self.reset_timeout);
        self.transition(slow, word, OPEN);
        slow.until = until;
    }

    /// Moves to `to` with the next epoch and fresh counters; the mutex is held (`slow`). Returns
    /// the new state word.
    fn transition(&self, slow: &mut Slow, word: u64, to: u64) -> u64 {
        let next = (epoch(word) + 1) & EPOCH_MASK;
        *slow = Slow::default();
        if let Trip::Rate { outcomes, .. } = &self.trip {
            // Before the state word: a call admitted under the new epoch finds its count ready.
            outcomes.failures.swap(next << 32, Ordering::AcqRel);
        }
        let new = with_low(pack(next, to), self.fresh_low(to));
        // A swap rather than a store: the same on the hardware for this rare write, and loom 0.7
        // models a plain store among compare-and-swaps wrongly (tokio-rs/loom#282), which made
        // `tests/loom.rs` see a transition undone.
        self.state.swap(new, Ordering::AcqRel);
        crate::engine::events::breaker_transition(self.name, state_of(word), state_of(new));
        new
    }

    /// `low` in a fresh word of phase `phase`: in the rate mode, a closed word's is the first
    /// slot plus one.
    fn fresh_low(&self, phase: u64) -> u64 {
        u64::from(phase == CLOSED && matches!(self.trip, Trip::Rate { .. }))
    }

    fn lock(&self) -> MutexGuard<'_, Slow> {
        // The state stays consistent even if a holder panicked: every update is a few
        // assignments with no call out in between.
        self.slow.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Builds a [`CircuitBreaker`].
///
/// ```
/// use std::time::Duration;
/// use reattempt::CircuitBreaker;
///
/// // Resilience4j-style: open when half of the last 20 calls (at least 10) failed.
/// let breaker = CircuitBreaker::builder()
///     .failure_rate(0.5)
///     .sliding_window(20)
///     .minimum_calls(10)
///     .reset_timeout(Duration::from_secs(10))
///     .half_open_probes(3)
///     .name("payments")
///     .build()
///     .unwrap();
/// assert_eq!(breaker.name(), "payments");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct CircuitBreakerBuilder {
    name: &'static str,
    failure_threshold: Option<u32>,
    failure_rate: Option<f64>,
    sliding_window: Option<u32>,
    minimum_calls: Option<u32>,
    reset_timeout: Duration,
    half_open_probes: u32,
}

impl Default for CircuitBreakerBuilder {
    fn default() -> Self {
        CircuitBreakerBuilder {
            name: "circuit_breaker",
            failure_threshold: None,
            failure_rate: None,
            sliding_window: None,
            minimum_calls: None,
            reset_timeout: Duration::from_secs(30),
            half_open_probes: 1,
        }
    }
}

impl CircuitBreakerBuilder {
    /// Opens after this many failures in a row (≥ 1; default 5). Not with `failure_rate`.
    pub fn failure_threshold(mut self, n: u32) -> Self {
        self.failure_threshold = Some(n);
        self
    }

    /// Opens when the share of failures over the sliding window reaches `rate` (in (0, 1]; taken
    /// to the millionth, and compared exactly: `0.55` over 100 calls opens at 55 failures).
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = Some(rate);
        self
    }

    /// The number of recent calls the failure rate is measured over (≥ 1; default 100).
    pub fn sliding_window(mut self, calls: u32) -> Self {
        self.sliding_window = Some(calls);
        self
    }

    /// The fewest calls in the window before the rate is judged (≥ 1, ≤ window; default the window).
    pub fn minimum_calls(mut self, calls: u32) -> Self {
        self.minimum_calls = Some(calls);
        self
    }

    /// How long the breaker stays open before probing, and how long a probe may stay out before
    /// its slot is given to another (> 0; default 30 s). A duration past what the clock can
    /// represent (`Duration::MAX`) keeps an opened breaker open until the process restarts.
    pub fn reset_timeout(mut self, d: Duration) -> Self {
        self.reset_timeout = d;
        self
    }

    /// How many probes a half-open breaker lets through, all of which must succeed to close (≥ 1; default 1).
    pub fn half_open_probes(mut self, n: u32) -> Self {
        self.half_open_probes = n;
        self
    }

    /// A label for events.
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Checks the settings and makes the breaker.
    ///
    /// # Errors
    /// A [`ConfigError`](crate::ConfigError) naming the field at fault.
    pub fn build(self) -> Result<CircuitBreaker, crate::ConfigError> {
        use crate::ConfigError as E;
        let trip = match (self.failure_threshold, self.failure_rate) {
            (Some(_), Some(_)) => {
                return Err(E::Conflict {
                    field: "failure_rate",
                    other: "failure_threshold",
                });
            }
            (threshold, None) => {
                if self.sliding_window.is_some() || self.minimum_calls.is_some() {
                    return Err(E::Requires {
                        field: if self.sliding_window.is_some() {
                            "sliding_window"
                        } else {
                            "minimum_calls"
                        },
                        other: "failure_rate",
                    });
                }
                match threshold.unwrap_or(5) {
                    0 => {
                        return Err(E::Zero {
                            field: "failure_threshold",
                        });
                    }
                    n => Trip::Consecutive(n),
                }
            }
            (None, Some(rate)) => {
                // Taken to the millionth, so that the comparison is exact: 0.55 trips at 55 of 100.
                let rate_ppm = (rate * 1e6).round();
                if !(rate.is_finite() && rate <= 1.0 && rate_ppm >= 1.0) {
                    return Err(E::OutOfRange {
                        field: "failure_rate",
                        rule: "a share of failures in (0, 1], at least 0.000001",
                    });
                }
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "in 1..=1_000_000, checked above"
                )]
                let rate_ppm = rate_ppm as u32;
                let window = self.sliding_window.unwrap_or(100);
                if window == 0 {
                    return Err(E::Zero {
                        field: "sliding_window",
                    });
                }
                let minimum_calls = self.minimum_calls.unwrap_or(window);
                if minimum_calls == 0 || minimum_calls > window {
                    return Err(E::OutOfRange {
                        field: "minimum_calls",
                        rule: "at least 1 and at most `sliding_window`",
                    });
                }
                Trip::Rate {
                    rate_ppm,
                    window,
                    minimum_calls,
                    outcomes: Window::new(window),
                }
            }
        };
        if self.reset_timeout.is_zero() {
            return Err(E::Zero {
                field: "reset_timeout",
            });
        }
        if self.half_open_probes == 0 {
            return Err(E::Zero {
                field: "half_open_probes",
            });
        }
        let state = with_low(
            pack(0, CLOSED),
            u64::from(matches!(trip, Trip::Rate { .. })),
        );
        Ok(CircuitBreaker {
            name: self.name,
            trip,
            reset_timeout: self.reset_timeout,
            half_open_probes: self.half_open_probes,
            state: AtomicU64::new(state),
            slow: Mutex::new(Slow::default()),
        })
    }
}

#[cfg(test)]
mod tests;
