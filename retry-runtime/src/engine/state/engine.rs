//! The [`Engine`]: the state of one logical call, how it is made, and what reads and marks it
//! (the attempt counter, the class of the attempt that just ended, the clock, the key).

use std::cell::Cell;

use tokio::time::Instant;

use super::word::{CLASS_MASK, FLAG_BITS, NOT_MADE, ONE_ATTEMPT, PAID_MASK, THROTTLED, TIMED_OUT};
use crate::ErrorClass;
use crate::engine::instant_slot::InstantSlot;
use crate::engine::key::IdempotencyKey;
use crate::engine::spans::Spans;
use crate::schedule::delays::Schedule;
use crate::schedule::policy::RetryPolicy;

/// The state of one logical call: which attempt it is on, when it started, its idempotency key
/// and where it is in its schedule.
///
/// The fields that [`context()`](crate::context()) reads live in `Cell`s, since it reads them
/// through a shared pointer while the call's attempt is being polled.
///
/// ```
/// use std::time::Duration;
/// use tokio::time::Instant;
/// use reattempt::{GiveUpReason, Jitter, RetryPolicy};
/// use retry_runtime::__private::{Decision, Engine, Start};
///
/// let policy = RetryPolicy::builder().max_attempts(2).jitter(Jitter::None).build().unwrap();
/// let mut engine = Engine::new(&policy);
/// let now = Instant::now();
/// assert_eq!(engine.begin(false, || now, None), Start::Run(None));
/// assert_eq!(engine.after_failure(true, None, now), Decision::Retry(Duration::from_millis(100)));
/// assert_eq!(engine.begin(false, || now, None), Start::Run(None));
/// assert_eq!(engine.after_failure(true, None, now), Decision::Stop(GiveUpReason::Exhausted));
/// ```
#[derive(Debug)]
pub struct Engine<'p> {
    pub(super) policy: &'p RetryPolicy,
    /// The attempt number (saturating at 2^26 - 1) above two flags and what the budget was paid
    /// for the last retry (0: nothing): see `FLAG_BITS`.
    pub(super) attempt: Cell<u32>,
    pub(super) start: InstantSlot,
    /// The key's bits, 0 until drawn (a drawn 0 is redrawn).
    pub(super) key: Cell<[u64; 2]>,
    pub(super) schedule: Schedule,
    /// The time limit of the attempt begun last, if it has one (see
    /// [`RetryContext::remaining`](crate::RetryContext::remaining)).
    pub(super) attempt_deadline: Cell<Option<Instant>>,
    /// The fault injected into the attempt running now, until its outcome is decided (feature
    /// `testing`): what the decision counts as injected.
    #[cfg(feature = "testing")]
    pub(super) injected: Cell<Option<crate::testing::InjectedFault>>,
    /// The call's number among the calls through its policy's fault injection, from its first
    /// draw (feature `testing`): its attempts draw from it.
    #[cfg(feature = "testing")]
    pub(super) fault_call: Cell<Option<u64>>,
    /// The call's spans (feature `spans`; without it, an empty type).
    pub(crate) spans: Spans,
}

impl<'p> Engine<'p> {
    /// A call that has made no attempt yet. Reads no clock: the call's clock starts with its
    /// first attempt when the policy has `max_elapsed` (which needs the start time), otherwise
    /// at the first failure or the first [`context()`](crate::context()), so that a call that
    /// succeeds reads no clock. (A future may be created well before it is first polled: its
    /// clock does not run meanwhile.)
    #[inline]
    pub fn new(policy: &'p RetryPolicy) -> Self {
        Engine {
            policy,
            attempt: Cell::new(0),
            start: InstantSlot::empty(),
            key: Cell::new([0; 2]),
            schedule: Schedule::default(),
            attempt_deadline: Cell::new(None),
            #[cfg(feature = "testing")]
            injected: Cell::new(None),
            #[cfg(feature = "testing")]
            fault_call: Cell::new(None),
            spans: Spans::NONE,
        }
    }

    /// A call whose first attempt is about to begin: as [`new`](Self::new), with the clock
    /// started now when the policy has `max_elapsed` (as the first [`begin`](Self::begin) would).
    /// The start instant is written with the rest of the state (no address of it is taken), so
    /// that a new call's state is stored once, in place.
    #[inline]
    pub(crate) fn new_started(policy: &'p RetryPolicy) -> Self {
        Engine {
            policy,
            attempt: Cell::new(0),
            start: if policy.max_elapsed.is_some() {
                InstantSlot::now()
            } else {
                InstantSlot::empty()
            },
            key: Cell::new([0; 2]),
            schedule: Schedule::default(),
            attempt_deadline: Cell::new(None),
            #[cfg(feature = "testing")]
            injected: Cell::new(None),
            #[cfg(feature = "testing")]
            fault_call: Cell::new(None),
            spans: Spans::NONE,
        }
    }

    /// The policy this call follows.
    #[inline]
    pub fn policy(&self) -> &'p RetryPolicy {
        self.policy
    }

    /// Notes the time limit of the attempt just begun (`None`: it has none), which
    /// [`RetryContext::remaining`](crate::RetryContext::remaining) reads. Written only for a
    /// timed attempt, so that an untimed call's success path stores nothing.
    #[inline]
    pub(crate) fn note_attempt_deadline(&self, deadline: Option<Instant>) {
        // Kept as it is (not packed as `start` is): a timed attempt's success path pays one
        // store for it, where packing cost a hundred instructions.
        self.attempt_deadline.set(deadline);
    }

    /// The time limit of the attempt begun last, if it has one.
    #[inline]
    pub(crate) fn attempt_deadline(&self) -> Option<Instant> {
        self.attempt_deadline.get()
    }

    /// Whether this call may be repeated after an attempt whose outcome is unknown (see
    /// [`Effect`](crate::Effect)), by its policy alone ([`RetryPolicy::idempotent`]; not said:
    /// no). A call's own word comes first: see [`idempotent_over`](Self::idempotent_over).
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().idempotent(true).build().unwrap();
    /// assert!(Engine::new(&policy).idempotent());
    /// let plain = RetryPolicy::builder().build().unwrap();
    /// assert!(!Engine::new(&plain).idempotent());
    /// ```
    #[inline]
    pub fn idempotent(&self) -> bool {
        self.idempotent_over(None)
    }

    /// Whether this call may be repeated after an attempt whose outcome is unknown: what the
    /// call or its request says (`said`: the call's `.idempotent(…)`, HTTP's method rule; see
    /// [`Hooks::idempotent`](crate::Hooks::idempotent)), else what its policy says, else no.
    /// (Reading the call's idempotency key does not say it: a key helps only where the server
    /// deduplicates by it, which the call knows and the crate does not.)
    #[inline]
    pub(crate) fn idempotent_over(&self, said: Option<bool>) -> bool {
        said.or(self.policy.idempotent()).unwrap_or(false)
    }

    /// The current attempt's number (1-based); 0 before the first.
    #[inline]
    pub fn attempt(&self) -> u32 {
        self.attempt.get() >> FLAG_BITS
    }

    #[inline]
    pub(super) fn paid(&self) -> u32 {
        self.attempt.get() & PAID_MASK
    }

    #[inline]
    pub(super) fn set_paid(&self, paid: u32) {
        let keep = self.attempt.get() & !PAID_MASK;
        self.attempt.set(keep | paid);
    }

    /// Notes that the attempt that just ended timed out: the policy's `timeout` cut it, or its
    /// error says it was a timeout. A retry after it costs the budget's `timeout_cost`, and the
    /// breaker counts it as a failure.
    #[inline]
    pub fn mark_timed_out(&self) {
        self.mark_class(ErrorClass::Timeout);
    }

    /// Notes the class of the attempt that just ended (see [`ErrorClass`]): what a retry after
    /// it costs the budget, and the delay it grows from.
    #[inline]
    pub fn mark_class(&self, class: ErrorClass) {
        let flag = match class {
            ErrorClass::Transient => 0,
            ErrorClass::Timeout => TIMED_OUT,
            ErrorClass::Throttling => THROTTLED,
        };
        self.attempt.set((self.attempt.get() & !CLASS_MASK) | flag);
    }

    /// Notes the class an attempt's error says it is of: an attempt that our own `timeout` cut
    /// stays a timeout, whatever its error says.
    #[inline]
    pub(crate) fn note_class(&self, class: ErrorClass) {
        if class != ErrorClass::Transient && !self.timed_out() {
            self.mark_class(class);
        }
    }

    /// The class of the attempt that just ended (until the next one begins): transient unless
    /// marked.
    #[inline]
    pub fn class(&self) -> ErrorClass {
        match self.attempt.get() & CLASS_MASK {
            TIMED_OUT => ErrorClass::Timeout,
            THROTTLED => ErrorClass::Throttling,
            _ => ErrorClass::Transient,
        }
    }

    /// Whether the attempt that just ended timed out (until the next one begins).
    #[inline]
    pub fn timed_out(&self) -> bool {
        self.attempt.get() & CLASS_MASK == TIMED_OUT
    }

    /// Forgets the class of an attempt: a hedged call's copy that timed out (or was throttled)
    /// has been decided, and the next copy to end (begun before it ended) is of its own class.
    pub(crate) fn forget_class(&self) {
        self.attempt.set(self.attempt.get() & !CLASS_MASK);
    }

    /// Forgets that the attempt begun last was not made: a hedged call's copy that could not
    /// start does not end the call while other copies are in flight.
    pub(crate) fn forget_not_made(&self) {
        self.attempt.set(self.attempt.get() & !NOT_MADE);
    }

    /// Whether the attempt that just ended was not made: no time remained ([`Start::NotMade`]).
    #[inline]
    pub fn not_made(&self) -> bool {
        self.attempt.get() & NOT_MADE != 0
    }

    /// Starts the call's schedule again, the attempt that just ended counting as the first: a
    /// resumed stream that delivered items since its last failure (see
    /// [`RetryStream::progress_resets`](crate::RetryStream::progress_resets)). The flags of
    /// that attempt, what the budget was paid, the clock and the key stay.
    pub(crate) fn restart_schedule(&mut self) {
        let flags = self.attempt.get() & (ONE_ATTEMPT - 1);
        self.attempt.set(ONE_ATTEMPT | flags);
        self.schedule = Schedule::default();
    }

    /// When the call's clock started, starting it at `now` if it has not yet.
    pub fn start_or(&self, now: impl FnOnce() -> Instant) -> Instant {
        if let Some(start) = self.start.get() {
            start
        } else {
            let start = now();
            self.start.set(start);
            start
        }
    }

    /// The call's idempotency key, drawn on first use and then the same for every attempt.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        let mut bits = self.key.get();
        while bits == [0; 2] {
            bits = IdempotencyKey::random().to_halves();
            self.key.set(bits);
        }
        IdempotencyKey::from_halves(bits)
    }

    /// The instant by which the whole call must be over, if the policy sets `max_elapsed`.
    /// A deadline too far to represent counts as none.
    pub fn deadline(&self) -> Option<Instant> {
        let limit = self.policy.max_elapsed?;
        self.start.get()?.checked_add(limit)
    }
}

/// The earlier of two optional deadlines.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
