//! The state of one call and the pure rules over it: when an attempt may start and with how
//! much time, and, given how an attempt ended, whether to stop or to sleep and retry.
//!
//! Plain state and plain functions, with the clock passed in, so that every rule is unit-tested
//! without a runtime. [`steps`](crate::engine::steps) applies them for the drivers.

use std::cell::Cell;
use std::time::Duration;

use tokio::time::Instant;

use crate::ErrorClass;
use crate::HintMode;
use crate::engine::deadline::instant_after;
use crate::engine::give_up::GiveUpReason;
use crate::engine::instant_slot::InstantSlot;
use crate::engine::key::IdempotencyKey;
use crate::guards::budget::RetryBudget;
use crate::schedule::delays::Schedule;
use crate::schedule::policy::RetryPolicy;

/// What follows an attempt: stop with an outcome, or sleep and retry. The engine's rules stop
/// with a [`GiveUpReason`]; a call stops with its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<R> {
    /// Sleep this long, then make the next attempt.
    Retry(Duration),
    /// Stop: hand this to the caller (or to `#[recover]`).
    Stop(R),
}

/// How the next attempt starts, per [`Engine::begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Make the attempt, cut after this long if `Some` (the policy's `timeout`, clipped to what
    /// remains before the deadline).
    Run(Option<Duration>),
    /// No time remains before the deadline: the attempt is not made, and the call ends
    /// ([`GiveUpReason::DeadlineReached`]).
    NotMade,
}

// Here, where the engine draws it (`Engine::draw_fault`), below the steps that plan it.
/// What fault injection (feature `testing`) makes of an attempt just begun: see
/// [`FaultInjection`](crate::testing::FaultInjection). Every driver handles it the same way: it
/// waits `latency` (if any) before anything else; then, with `error`, it does not make the
/// attempt, and the attempt fails with its timeout conversion of `Elapsed::injected()` (noted as
/// a timeout: `Engine::mark_timed_out`); without, it makes the attempt, whose time limit (fixed
/// when the attempt began) the latency counts against. A driver without a timeout conversion
/// injects the latency only.
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The latency added before the attempt (or its injected error).
    pub(crate) latency: Option<Duration>,
    /// The attempt is not made: it fails with an injected error.
    pub(crate) error: bool,
}

/// In the low six bits, what the budget was paid for the last retry (3 bits), the class of the
/// attempt that just ended (2 bits) and whether it was not made; above them, the attempt counter
/// (packed, so that the call's future does not grow; per call, so that no other call can see
/// them). The counter is on top so that starting an attempt is one addition that cannot carry
/// into the flags.
const FLAG_BITS: u32 = 6;
const ATTEMPT_BITS: u32 = u32::BITS - FLAG_BITS;
const _: () = assert!(RetryPolicy::MAX_ATTEMPTS == (1 << ATTEMPT_BITS) - 1);
/// One attempt, in the counter's place.
const ONE_ATTEMPT: u32 = 1 << FLAG_BITS;
/// The class of the attempt that just ended (`ErrorClass`): 0 transient (or no failure).
const CLASS_MASK: u32 = 0b11 << 3;
/// The attempt that just ended timed out: the policy's `timeout` cut it, or its error says so.
const TIMED_OUT: u32 = 1 << 3;
/// The attempt that just ended was throttled: its error says the server asked to slow down.
const THROTTLED: u32 = 2 << 3;
/// The attempt that just ended was not made: no time remained.
const NOT_MADE: u32 = 1 << 5;
/// What the budget was paid for the last retry.
const PAID_MASK: u32 = 0b111;
/// The last retry was paid `retry_cost`.
const PAID_RETRY: u32 = 1;
/// The last retry was paid `timeout_cost`.
const PAID_TIMEOUT: u32 = 2;
/// The last payment was for a hedge: `retry_cost`, never paid back by the call's success.
const PAID_HEDGE: u32 = 3;
/// The last retry was paid `throttling_cost`.
const PAID_THROTTLING: u32 = 4;
/// The call gave up because only the budget refused its retry, under a long-polling policy: it
/// waits until `attempt_deadline` (no attempt follows, so the slot is free) before returning.
/// Nothing is paid then, and nothing is refunded after a give-up.
const LINGERING: u32 = 5;

/// What a retry after an error of `class` is paid, as noted in the engine's word.
const fn paid_for(class: ErrorClass) -> u32 {
    match class {
        ErrorClass::Transient => PAID_RETRY,
        ErrorClass::Timeout => PAID_TIMEOUT,
        ErrorClass::Throttling => PAID_THROTTLING,
    }
}

/// The class a payment noted in the engine's word was for (a hedge pays as a transient retry).
const fn class_paid(paid: u32) -> ErrorClass {
    match paid {
        PAID_TIMEOUT => ErrorClass::Timeout,
        PAID_THROTTLING => ErrorClass::Throttling,
        _ => ErrorClass::Transient,
    }
}

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
    policy: &'p RetryPolicy,
    /// The attempt number (saturating at 2^26 - 1) above two flags and what the budget was paid
    /// for the last retry (0: nothing): see `FLAG_BITS`.
    attempt: Cell<u32>,
    start: InstantSlot,
    /// The key's bits, 0 until drawn (a drawn 0 is redrawn).
    key: Cell<[u64; 2]>,
    schedule: Schedule,
    /// The time limit of the attempt begun last, if it has one (see
    /// [`RetryContext::remaining`](crate::RetryContext::remaining)).
    attempt_deadline: Cell<Option<Instant>>,
    /// The fault injected into the attempt running now, until its outcome is decided (feature
    /// `testing`): what the decision counts as injected.
    #[cfg(feature = "testing")]
    injected: Cell<Option<crate::testing::InjectedFault>>,
    /// The call's number among the calls through its policy's fault injection, from its first
    /// draw (feature `testing`): its attempts draw from it.
    #[cfg(feature = "testing")]
    fault_call: Cell<Option<u64>>,
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

    /// Starts the next attempt, as the rules say: the call's clock starts with its first attempt
    /// when the policy has `max_elapsed`; a `timed` attempt gets the policy's `timeout`, clipped
    /// to what remains before the earlier of the call's deadline and `inherited_deadline` (the
    /// deadline of the calls this one is nested in); and when no time remains at all, the attempt
    /// is not made ([`Start::NotMade`]), so that the body is never polled past the deadline.
    /// An attempt that is not timed (no `timeout`) always runs: `max_elapsed` then bounds only
    /// the sleeps. `now` is read at most once, and only when a deadline needs it.
    #[inline]
    pub fn begin(
        &mut self,
        timed: bool,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> Start {
        if self.policy.max_elapsed.is_none() && (!timed || inherited_deadline.is_none()) {
            // No deadline that bears on this attempt: no clock, and the limit is the policy's
            // `timeout` as it stands.
            self.begin_attempt();
            return match self.policy.timeout.filter(|_| timed) {
                Some(Duration::ZERO) => self.not_made_now(),
                limit => Start::Run(limit),
            };
        }
        self.begin_under_deadline(timed, now, inherited_deadline)
    }

    /// [`begin`](Self::begin) with a deadline, the call's own or an inherited one.
    fn begin_under_deadline(
        &mut self,
        timed: bool,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> Start {
        let (mut clock, mut read) = (Some(now), None);
        let mut now =
            || *read.get_or_insert_with(|| clock.take().map_or_else(Instant::now, |f| f()));
        if self.attempt() == 0 && self.policy.max_elapsed.is_some() {
            self.start_or(&mut now);
        }
        self.begin_attempt();
        let limit = if timed {
            self.attempt_timeout_within(now, inherited_deadline)
        } else {
            None
        };
        if limit == Some(Duration::ZERO) {
            self.not_made_now()
        } else {
            Start::Run(limit)
        }
    }

    /// The attempt just begun is not made: no time remains.
    #[cold]
    fn not_made_now(&self) -> Start {
        self.attempt.set(self.attempt.get() | NOT_MADE);
        Start::NotMade
    }

    /// Whether the next attempt would be made if it began now: `false` only for a `timed`
    /// attempt with no time left before the earlier of the call's deadline and
    /// `inherited_deadline` (see [`begin`](Self::begin)). Asked before the circuit breaker, so
    /// that an attempt that cannot be made takes no permit and is not rejected: it ends the call
    /// as `DeadlineReached`. `now` is read only when a deadline needs it.
    pub fn would_run(
        &self,
        timed: bool,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> bool {
        if !timed || self.policy.timeout.is_none() {
            return true;
        }
        let unstarted = self.start.get().is_none() && self.policy.max_elapsed.is_some();
        if !unstarted && earliest(self.deadline(), inherited_deadline).is_none() {
            return true;
        }
        let now = now();
        // A call whose clock has not started starts it with this attempt.
        let own = if unstarted {
            self.policy
                .max_elapsed
                .and_then(|limit| now.checked_add(limit))
        } else {
            self.deadline()
        };
        earliest(own, inherited_deadline).is_none_or(|deadline| deadline > now)
    }

    /// Starts the next attempt, untimed, of a call whose clock has started if its policy needs
    /// one (see starting the clock when the policy has `max_elapsed`, as the first [`begin`](Self::begin) would): as [`begin`](Self::begin) then does, with
    /// nothing to check. Gives the attempt's number (1-based).
    #[inline]
    pub(crate) fn begin_untimed_started(&mut self) -> u32 {
        debug_assert!(self.policy.max_elapsed.is_none() || self.start.get().is_some());
        // The drivers that call this begin an attempt only below `max_attempts` (the first, or
        // after a `Retry`), which is at most `MAX_ATTEMPTS`: the counter cannot overflow, so the
        // addition needs no test (this runs after the guards' admission, whose out-of-line
        // paths keep the compiler from knowing the counter of a call's first attempt).
        debug_assert!(self.attempt() < RetryPolicy::MAX_ATTEMPTS);
        let next = (self.attempt.get() & !(CLASS_MASK | NOT_MADE)).wrapping_add(ONE_ATTEMPT);
        self.attempt.set(next);
        next >> FLAG_BITS
    }

    /// Marks the start of the next attempt and gives its number (1-based).
    #[inline]
    fn begin_attempt(&mut self) -> u32 {
        // A new attempt: the flags of the last one are gone, what the budget paid stays, and the
        // counter saturates at 2^26 - 1.
        let kept = self.attempt.get() & !(CLASS_MASK | NOT_MADE);
        let next = kept.checked_add(ONE_ATTEMPT).unwrap_or(kept);
        self.attempt.set(next);
        next >> FLAG_BITS
    }

    /// Draws the fault of the attempt just begun from the policy's fault injection (feature
    /// `testing`), and notes it for the decision that counts it. `None` (at once, without
    /// `testing`, or without the setting: one branch) when the attempt runs untouched.
    #[cfg(feature = "testing")]
    #[inline]
    pub(crate) fn draw_fault(&self) -> Option<Fault> {
        match &self.policy.faults {
            Some(faults) => self.draw_fault_from(faults),
            None => None,
        }
    }

    #[cfg(feature = "testing")]
    #[cold]
    #[inline(never)]
    fn draw_fault_from(&self, faults: &crate::testing::faults::Faults) -> Option<Fault> {
        use crate::testing::InjectedFault;
        let kind = faults.next(&self.fault_call, self.attempt())?;
        let latency = faults.setting.latency().filter(|d| !d.is_zero());
        if kind == InjectedFault::Latency && latency.is_none() {
            // No latency to add: the attempt runs untouched, and nothing is injected.
            return None;
        }
        self.injected.set(Some(kind));
        Some(Fault {
            latency,
            error: kind == InjectedFault::Error,
        })
    }

    /// Notes that the fault drawn for the attempt running now was made a latency only (a driver
    /// that cannot convert an injected error into the call's error): counted as one if there is
    /// a latency to add, else not at all.
    #[cfg(feature = "testing")]
    pub(crate) fn fault_as_latency(&self, has_latency: bool) {
        if self.injected.get().is_some() {
            self.injected
                .set(has_latency.then_some(crate::testing::InjectedFault::Latency));
        }
    }

    /// The fault injected into the attempt just ended, if any, forgotten (it is counted once).
    #[cfg(feature = "testing")]
    #[inline]
    pub(crate) fn take_injected(&self) -> Option<crate::testing::InjectedFault> {
        self.injected.take()
    }

    /// The current attempt's number (1-based); 0 before the first.
    #[inline]
    pub fn attempt(&self) -> u32 {
        self.attempt.get() >> FLAG_BITS
    }

    #[inline]
    fn paid(&self) -> u32 {
        self.attempt.get() & PAID_MASK
    }

    #[inline]
    fn set_paid(&self, paid: u32) {
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

    /// Settles a call that succeeded with its budget, as the AWS SDKs' retry quota does: a call
    /// that retried gets its last retry's cost back; a first-try success deposits
    /// `success_deposit` (see [`after_failure_within`](Self::after_failure_within)).
    #[inline]
    pub fn succeeded(&self, budget: &RetryBudget) {
        match self.paid() {
            0 => budget.first_try_succeeded(),
            PAID_HEDGE => {}
            paid => budget.settle_retried_success(class_paid(paid)),
        }
        self.set_paid(0);
    }

    /// Pays `budget` for a hedge (its `retry_cost`), if it can: `false` when it cannot, and then
    /// no hedge starts. Unlike a retry's, a hedge's cost is not paid back when the call succeeds
    /// (its copy did load the dependency), and a call that hedged deposits nothing: hedges are
    /// funded by calls that succeed at once, so they stop when the dependency is saturated.
    /// A retry paid before it stays paid for: its cost still comes back when the call succeeds.
    /// If the hedge is then not made, give its cost back with the budget's `refund(false)`.
    ///
    /// ```
    /// use reattempt::{RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    /// let engine = Engine::new(&policy);
    /// assert!(engine.pay_hedge(&budget));
    /// engine.succeeded(&budget);
    /// assert_eq!(budget.available(), 95, "a hedge is not refunded, and no deposit");
    /// ```
    pub fn pay_hedge(&self, budget: &RetryBudget) -> bool {
        if budget.try_withdraw_for(ErrorClass::Transient) {
            // The last retry's payment, if any, is kept: it is refunded on success.
            if self.paid() == 0 {
                self.set_paid(PAID_HEDGE);
            }
            true
        } else {
            false
        }
    }

    /// Whether the call's last payment was for a hedge (see [`pay_hedge`](Self::pay_hedge)).
    #[inline]
    pub(crate) fn paid_hedge(&self) -> bool {
        self.paid() == PAID_HEDGE
    }

    /// Forgets the payment [`pay_hedge`](Self::pay_hedge) noted for a hedge that was not made
    /// after all (its cost given back): unless an earlier hedge was made (`hedged_before`), the
    /// call has not hedged, and a first-try success still deposits.
    #[inline]
    pub(crate) fn hedge_not_made(&self, hedged_before: bool) {
        if !hedged_before && self.paid() == PAID_HEDGE {
            self.set_paid(0);
        }
    }

    /// Notes that the call has hedged (a copy overlapped another) once what it paid for its
    /// last retry is settled: its success then deposits nothing (see [`pay_hedge`](Self::pay_hedge)).
    #[inline]
    pub(crate) fn mark_hedged(&self) {
        if self.paid() == 0 {
            self.set_paid(PAID_HEDGE);
        }
    }

    /// Gives back what the budget was paid for the retry about to be made, when its attempt is
    /// not made after all (the circuit breaker rejected it): an attempt never made costs nothing.
    pub fn unmade(&self, budget: &RetryBudget) {
        if let paid @ 1.. = self.paid() {
            budget.refund_for(class_paid(paid));
        }
        self.set_paid(0);
    }

    /// As [`unmade`](Self::unmade), in a call that hedged (copies in flight): the retry's payment
    /// comes back, and the call stays one that hedged, which deposits nothing when it succeeds
    /// (see [`pay_hedge`](Self::pay_hedge)).
    pub fn unmade_while_hedged(&self, budget: &RetryBudget) {
        self.unmade(budget);
        self.set_paid(PAID_HEDGE);
    }

    /// Notes that the circuit breaker rejected the next attempt (the call ends without it). A
    /// call whose first attempt was rejected starts its clock here when the policy has
    /// `max_elapsed`, as that attempt would have: what runs after it in the call's context (the
    /// `#[recover]` fallback) is bounded by the call's deadline whatever happened to the attempts.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().max_elapsed(Duration::from_secs(1)).build().unwrap();
    /// let engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.rejected(|| now);
    /// assert_eq!(engine.deadline(), Some(now + Duration::from_secs(1)));
    /// ```
    pub fn rejected(&self, now: impl FnOnce() -> Instant) {
        if self.policy.max_elapsed.is_some() {
            self.start_or(now);
        }
    }

    /// Whether the one-layer rule keeps this call from retrying the attempt that just ended: its
    /// policy sets [`one_layer`](crate::RetryPolicyBuilder::one_layer), it has attempts left,
    /// and `outer_retries` (an enclosing retrying call still has attempts left after the one it
    /// is making). Then the call gives up with [`GiveUpReason::OuterRetries`].
    ///
    /// ```
    /// use reattempt::RetryPolicy;
    /// use retry_runtime::__private::Engine;
    ///
    /// let policy = RetryPolicy::builder().one_layer(true).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// retry_runtime::__private::begin(&mut engine, false);
    /// assert!(engine.defers_to_outer(true));
    /// assert!(!engine.defers_to_outer(false), "the outer call is on its last attempt");
    /// ```
    #[inline]
    pub fn defers_to_outer(&self, outer_retries: bool) -> bool {
        self.policy.one_layer && outer_retries && self.attempt() < self.policy.max_attempts
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

    /// The time limit for the attempt about to start: `timeout`, clipped to what remains before
    /// the deadline. `None` when the policy has no `timeout` (then `max_elapsed` limits only the
    /// sleeps: an attempt is never cut short without a `timeout`). `now` is read only when both
    /// are set.
    pub fn attempt_timeout(&self, now: impl FnOnce() -> Instant) -> Option<Duration> {
        self.attempt_timeout_within(now, None)
    }

    /// As [`attempt_timeout`](Self::attempt_timeout), under an inherited deadline too.
    pub fn attempt_timeout_within(
        &self,
        now: impl FnOnce() -> Instant,
        inherited_deadline: Option<Instant>,
    ) -> Option<Duration> {
        let timeout = self.policy.timeout?;
        Some(match earliest(self.deadline(), inherited_deadline) {
            Some(deadline) => timeout.min(deadline.saturating_duration_since(now())),
            None => timeout,
        })
    }

    /// Decides what follows a failed attempt (an error, or an `Ok` value the caller retries),
    /// with neither an inherited deadline nor a budget; see
    /// [`after_failure_within`](Self::after_failure_within).
    pub fn after_failure(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        now: Instant,
    ) -> Decision<GiveUpReason> {
        self.after_failure_within(retryable, hint, now, None, None)
    }

    /// Whether a sleep of `delay` from `now` ends before the call's deadline and an enclosing
    /// call's (`inherited`): no sleep of the call ends at or past either.
    #[inline]
    pub(crate) fn wakes_in_time(
        &self,
        now: Instant,
        delay: Duration,
        inherited: Option<Instant>,
    ) -> bool {
        earliest(self.deadline(), inherited)
            .is_none_or(|deadline| now.checked_add(delay).is_some_and(|w| w < deadline))
    }

    /// Decides what follows a failed attempt (an error, or an `Ok` value the caller retries).
    ///
    /// `retryable` says whether the outcome is one to retry; `hint` is a server's requested delay
    /// (Retry-After), a floor under the computed (jittered) delay: the sleep is the larger of the
    /// two, so a zero or past hint never sends every client back at once. The call never comes
    /// back before the server allows: a hint beyond `max_delay`, or one whose wait would end at
    /// or past the deadline, ends the call ([`GiveUpReason::RetryAfterTooLong`]). Under
    /// [`HintMode::Clamp`] (the policy's `hint_mode`) the hint is clamped to the computed delay
    /// plus the mode's margin instead, and `max_delay` does not bound it. A retry is also
    /// refused when attempts are exhausted or when the sleep would end at or past the deadline
    /// (the call's own, or `inherited_deadline`, an enclosing call's). A retry that is otherwise
    /// allowed must be paid from `budget` (its `timeout_cost` after an attempt that
    /// [timed out](Self::timed_out)); nothing is withdrawn when the call gives up for another
    /// reason. When the budget alone refuses, a long-polling policy's call still waits the
    /// retry's delay before it returns ([`linger`](Self::linger)).
    ///
    /// ```
    /// use tokio::time::Instant;
    /// use reattempt::{GiveUpReason, RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::{Decision, Engine};
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.begin(false, || now, None);
    /// let decision = engine.after_failure_within(true, None, now, None, Some(&budget));
    /// assert!(matches!(decision, Decision::Retry(_)));
    /// assert_eq!(budget.available(), 95);
    /// engine.begin(false, || now, None);
    /// engine.succeeded(&budget); // the retry worked: its 5 tokens come back
    /// assert_eq!(budget.available(), 100);
    /// ```
    pub fn after_failure_within(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        now: Instant,
        inherited_deadline: Option<Instant>,
        budget: Option<&RetryBudget>,
    ) -> Decision<GiveUpReason> {
        self.after_failure_chosen(
            retryable,
            hint,
            |_, _| None,
            now,
            inherited_deadline,
            budget,
        )
    }

    /// As [`after_failure_within`](Self::after_failure_within), with the delay `choose`n from
    /// the attempt that failed and the schedule's delay (`delay_for`): `Some` replaces the
    /// schedule's delay, bounded by `max_delay`; the hint is still a floor under it, and the
    /// deadline still ends the call before a delay it cannot wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use reattempt::{Jitter, RetryPolicy};
    /// use retry_runtime::__private::{Decision, Engine};
    ///
    /// let ms = Duration::from_millis;
    /// let policy = RetryPolicy::builder().jitter(Jitter::None).max_delay(ms(500)).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.begin(false, || now, None);
    /// let chosen = engine.after_failure_chosen(true, None, |attempt, computed| Some(computed * 3 + ms(attempt.into())), now, None, None);
    /// assert_eq!(chosen, Decision::Retry(ms(301)));
    /// engine.begin(false, || now, None);
    /// let capped = engine.after_failure_chosen(true, Some(ms(50)), |_, _| Some(ms(9000)), now, None, None);
    /// assert_eq!(capped, Decision::Retry(ms(500)), "bounded by max_delay");
    /// ```
    pub fn after_failure_chosen(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        choose: impl FnOnce(u32, Duration) -> Option<Duration>,
        now: Instant,
        inherited_deadline: Option<Instant>,
        budget: Option<&RetryBudget>,
    ) -> Decision<GiveUpReason> {
        self.after_failure_ruled(
            retryable,
            hint,
            choose,
            now,
            (inherited_deadline, budget),
            true,
        )
    }

    /// As [`after_failure_chosen`](Self::after_failure_chosen), for a hedged call's copy that
    /// failed while others are in flight: a refused retry does not end the call (the others may
    /// answer), so it never lingers, and what the last retry paid stays noted for a success.
    pub(crate) fn after_failure_alongside(
        &mut self,
        hint: Option<Duration>,
        choose: impl FnOnce(u32, Duration) -> Option<Duration>,
        now: Instant,
        inherited_deadline: Option<Instant>,
        budget: Option<&RetryBudget>,
    ) -> Decision<GiveUpReason> {
        self.after_failure_ruled(true, hint, choose, now, (inherited_deadline, budget), false)
    }

    /// The rules of [`after_failure_chosen`](Self::after_failure_chosen); `may_linger`: a give-up
    /// ends the call, so a long-polling policy's wait applies.
    fn after_failure_ruled(
        &mut self,
        retryable: bool,
        hint: Option<Duration>,
        choose: impl FnOnce(u32, Duration) -> Option<Duration>,
        now: Instant,
        (inherited_deadline, budget): (Option<Instant>, Option<&RetryBudget>),
        may_linger: bool,
    ) -> Decision<GiveUpReason> {
        self.start_or(|| now);
        if !retryable {
            return Decision::Stop(GiveUpReason::NotRetryable);
        }
        if self.attempt() >= self.policy.max_attempts {
            return Decision::Stop(GiveUpReason::Exhausted);
        }
        let class = self.class();
        let scheduled =
            self.schedule
                .next(self.attempt(), self.policy, self.policy.base_delay(class));
        let computed = choose(self.attempt(), scheduled)
            .map_or(scheduled, |chosen| chosen.min(self.policy.max_delay));
        let delay = match (hint, self.policy.hint_mode) {
            (None, _) => computed,
            (Some(h), HintMode::Floor) if h > self.policy.max_delay => {
                return Decision::Stop(GiveUpReason::RetryAfterTooLong);
            }
            // A clamped hint is bounded by the schedule's delay, not by `max_delay`.
            (Some(h), mode) => mode.wait(computed, h),
        };
        if !self.wakes_in_time(now, delay, inherited_deadline) {
            // The hint is to blame when it is what sets the wait.
            let reason = if hint.is_some_and(|h| h >= computed) {
                GiveUpReason::RetryAfterTooLong
            } else {
                GiveUpReason::DeadlineReached
            };
            return Decision::Stop(reason);
        }
        if let Some(budget) = budget {
            if !budget.try_withdraw_for(class) {
                if may_linger && self.policy.long_polling {
                    // Only the budget refused: the retry's backoff is still waited (`linger`).
                    self.attempt_deadline.set(Some(instant_after(now, delay)));
                    self.set_paid(LINGERING);
                }
                return Decision::Stop(GiveUpReason::BudgetExhausted);
            }
            self.set_paid(paid_for(class));
        }
        Decision::Retry(delay)
    }

    /// When a call that just gave up may return, if it must wait first: a long-polling policy
    /// ([`long_polling`](crate::RetryPolicyBuilder::long_polling)) whose retry only the budget
    /// refused waits the backoff that retry would have used (`None` otherwise: return at once).
    /// Asked by a driver when the decision is to stop; read once (it forgets the wait).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use reattempt::{GiveUpReason, Jitter, RetryBudget, RetryPolicy};
    /// use retry_runtime::__private::{Decision, Engine};
    ///
    /// let policy = RetryPolicy::builder().jitter(Jitter::None).long_polling(true).build().unwrap();
    /// let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    /// let mut engine = Engine::new(&policy);
    /// let now = Instant::now();
    /// engine.begin(false, || now, None);
    /// let decision = engine.after_failure_within(true, None, now, None, Some(&empty));
    /// assert_eq!(decision, Decision::Stop(GiveUpReason::BudgetExhausted));
    /// assert_eq!(engine.linger(), Some(now + Duration::from_millis(100)));
    /// assert_eq!(engine.linger(), None, "read once");
    /// ```
    #[inline]
    pub fn linger(&self) -> Option<Instant> {
        if self.paid() != LINGERING {
            return None;
        }
        self.set_paid(0);
        self.attempt_deadline.take()
    }
}

/// A call's state without its policy: what a driver that owns its policy (behind an `Arc`, as
/// the tower layer does, whose futures must not borrow the layer) keeps between polls. Each poll
/// [`attach`](Detached::attach)es it to the policy, and [`Engine::detach`] puts it back.
#[derive(Debug, Default)]
pub struct Detached {
    attempt: Cell<u32>,
    start: InstantSlot,
    key: Cell<[u64; 2]>,
    schedule: Schedule,
    attempt_deadline: Cell<Option<Instant>>,
    #[cfg(feature = "testing")]
    injected: Cell<Option<crate::testing::InjectedFault>>,
    /// The call's number among the calls through its policy's fault injection, from its first
    /// draw (feature `testing`): its attempts draw from it.
    #[cfg(feature = "testing")]
    fault_call: Cell<Option<u64>>,
}

impl Detached {
    /// The state of a call that has made no attempt yet, as [`Engine::new`] makes it.
    #[inline]
    pub fn new() -> Self {
        Detached::default()
    }

    /// The engine of this call under `policy` (always the same policy for one call).
    #[inline]
    pub fn attach(self, policy: &RetryPolicy) -> Engine<'_> {
        Engine {
            policy,
            attempt: self.attempt,
            start: self.start,
            key: self.key,
            schedule: self.schedule,
            attempt_deadline: self.attempt_deadline,
            #[cfg(feature = "testing")]
            injected: self.injected,
            #[cfg(feature = "testing")]
            fault_call: self.fault_call,
        }
    }
}

impl Engine<'_> {
    /// This call's state, to keep without borrowing the policy (see [`Detached`]).
    #[inline]
    pub fn detach(self) -> Detached {
        Detached {
            attempt: self.attempt,
            start: self.start,
            key: self.key,
            schedule: self.schedule,
            attempt_deadline: self.attempt_deadline,
            #[cfg(feature = "testing")]
            injected: self.injected,
            #[cfg(feature = "testing")]
            fault_call: self.fault_call,
        }
    }
}

/// The earlier of two optional deadlines.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Jitter;

    const MS: Duration = Duration::from_millis(1);

    fn policy(b: crate::RetryPolicyBuilder) -> RetryPolicy {
        b.jitter(Jitter::None).build().unwrap()
    }

    impl<'p> Engine<'p> {
        /// An engine whose clock, if the policy needs one, started at `now`.
        fn started(policy: &'p RetryPolicy, now: impl FnOnce() -> Instant) -> Self {
            let engine = Engine::new(policy);
            if policy.max_elapsed.is_some() {
                engine.start_or(now);
            }
            engine
        }
    }

    #[test]
    fn retries_until_attempts_are_exhausted() {
        let p = policy(RetryPolicy::builder().max_attempts(3));
        let now = Instant::now();
        let mut e = Engine::started(&p, || unreachable!("no max_elapsed: no clock read"));
        let mut verdicts = vec![];
        for _ in 0..3 {
            e.begin_attempt();
            verdicts.push(e.after_failure(true, None, now));
        }
        assert_eq!(
            verdicts,
            [
                Decision::Retry(100 * MS),
                Decision::Retry(200 * MS),
                Decision::Stop(GiveUpReason::Exhausted)
            ]
        );
        assert_eq!(e.attempt(), 3);
    }

    #[test]
    fn a_non_retryable_outcome_stops_at_once() {
        let p = policy(RetryPolicy::builder());
        let mut e = Engine::started(&p, Instant::now);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(false, Some(MS), Instant::now()),
            Decision::Stop(GiveUpReason::NotRetryable)
        );
    }

    #[test]
    fn a_hint_is_a_floor_under_the_computed_delay() {
        let p = policy(RetryPolicy::builder().max_attempts(5).max_delay(1000 * MS));
        let mut e = Engine::started(&p, Instant::now);
        let now = Instant::now();
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, Some(700 * MS), now),
            Decision::Retry(700 * MS)
        );
        e.begin_attempt();
        // Zero, or a date in the past: at least the schedule's delay (retry 2: 200 ms).
        assert_eq!(
            e.after_failure(true, Some(Duration::ZERO), now),
            Decision::Retry(200 * MS)
        );
        e.begin_attempt();
        // The schedule went on counting under the hints: this is retry 3's delay.
        assert_eq!(e.after_failure(true, None, now), Decision::Retry(400 * MS));
        e.begin_attempt();
        // Exactly max_delay is allowed.
        assert_eq!(
            e.after_failure(true, Some(1000 * MS), now),
            Decision::Retry(1000 * MS)
        );
    }

    #[test]
    fn a_hint_beyond_max_delay_ends_the_call() {
        let p = policy(RetryPolicy::builder().max_attempts(5).max_delay(1000 * MS));
        let mut e = Engine::started(&p, Instant::now);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(
                true,
                Some(1000 * MS + Duration::from_nanos(1)),
                Instant::now()
            ),
            Decision::Stop(GiveUpReason::RetryAfterTooLong)
        );
        let mut e = Engine::started(&p, Instant::now);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, Some(Duration::MAX), Instant::now()),
            Decision::Stop(GiveUpReason::RetryAfterTooLong)
        );
    }

    /// `HintMode::AWS_2026`: the hint clamped to [tᵢ, tᵢ + 5 s], `max_delay` not applied to it
    /// (smithy-rs `standard.rs` `v2_1_retry_after_bounded_between_t_i_and_t_i_plus_5s`,
    /// `v2_1_retry_after_below_t_i_uses_t_i`, `v2_1_retry_after_above_t_i_plus_5s_capped`).
    #[test]
    fn a_clamped_hint_stays_within_five_seconds_of_the_computed_delay() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(10)
                .delay(50 * MS)
                .max_delay(Duration::from_secs(20))
                .hint_mode(HintMode::AWS_2026),
        );
        let now = Instant::now();
        let first = |hint: Duration| {
            let mut e = Engine::started(&p, || now);
            e.begin_attempt();
            e.after_failure(true, Some(hint), now)
        };
        assert_eq!(first(3000 * MS), Decision::Retry(3000 * MS));
        assert_eq!(first(10 * MS), Decision::Retry(50 * MS));
        assert_eq!(first(10_000 * MS), Decision::Retry(5050 * MS));
        // Beyond max_delay (the floor mode's give-up), and beyond what anything could wait.
        assert_eq!(first(Duration::from_secs(24)), Decision::Retry(5050 * MS));
        assert_eq!(first(Duration::MAX), Decision::Retry(5050 * MS));
        // Over a later retry's delay (retry 3: 200 ms).
        let mut e = Engine::started(&p, || now);
        for _ in 0..2 {
            e.begin_attempt();
            let _ = e.after_failure(true, None, now);
        }
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, Some(Duration::from_secs(60)), now),
            Decision::Retry(5200 * MS)
        );
        // The deadline still ends a wait that would outlast it, blaming the hint.
        let bounded = policy(
            RetryPolicy::builder()
                .delay(50 * MS)
                .max_elapsed(Duration::from_secs(2))
                .hint_mode(HintMode::AWS_2026),
        );
        let mut e = Engine::started(&bounded, || now);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, Some(Duration::from_secs(3)), now),
            Decision::Stop(GiveUpReason::RetryAfterTooLong)
        );
    }

    /// Long polling (botocore `test_sqs_triggers_long_polling_backoff_when_token_empty`, smithy-rs
    /// `long_polling_backs_off_when_token_bucket_empty` and the `..._must_not_delay` cases): only a
    /// retry the budget alone refuses leaves a wait, of the backoff it would have used.
    #[test]
    fn only_a_retry_refused_by_the_budget_alone_lingers() {
        let polling = policy(RetryPolicy::builder().max_attempts(2).long_polling(true));
        let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
        let full = RetryBudget::builder().build().unwrap();
        let now = Instant::now();
        let mut e = Engine::started(&polling, || now);
        e.begin_attempt();
        assert_eq!(
            e.after_failure_within(true, None, now, None, Some(&empty)),
            Decision::Stop(GiveUpReason::BudgetExhausted)
        );
        assert_eq!(e.linger(), Some(now + 100 * MS));
        assert_eq!(e.linger(), None, "read once");
        // Not retryable; attempts exhausted; paid: no wait.
        let mut e = Engine::started(&polling, || now);
        e.begin_attempt();
        let _ = e.after_failure_within(false, None, now, None, Some(&empty));
        assert_eq!(e.linger(), None, "not retryable");
        assert!(matches!(
            e.after_failure_within(true, None, now, None, Some(&full)),
            Decision::Retry(_)
        ));
        assert_eq!(e.linger(), None, "paid");
        e.begin_attempt();
        assert_eq!(
            e.after_failure_within(true, None, now, None, Some(&empty)),
            Decision::Stop(GiveUpReason::Exhausted)
        );
        assert_eq!(e.linger(), None, "after the last attempt");
        // A throttling error waits the throttling backoff (smithy-rs
        // `long_polling_backoff_after_throttling_error_when_token_bucket_empty`: 1 s).
        let throttled = policy(
            RetryPolicy::builder()
                .delay(50 * MS)
                .throttling_delay(Duration::from_secs(1))
                .long_polling(true),
        );
        let mut e = Engine::started(&throttled, || now);
        e.begin_attempt();
        e.mark_class(ErrorClass::Throttling);
        let _ = e.after_failure_within(true, None, now, None, Some(&empty));
        assert_eq!(e.linger(), Some(now + Duration::from_secs(1)));
        // Without long polling, or alongside other copies, no wait; the last payment stays.
        let plain = policy(RetryPolicy::builder());
        let mut e = Engine::started(&plain, || now);
        e.begin_attempt();
        let _ = e.after_failure_within(true, None, now, None, Some(&empty));
        assert_eq!(e.linger(), None, "not a long-polling policy");
        let three = policy(RetryPolicy::builder().max_attempts(3).long_polling(true));
        let mut e = Engine::started(&three, || now);
        e.begin_attempt();
        let one = RetryBudget::builder().max_tokens(5).build().unwrap();
        assert!(matches!(
            e.after_failure_within(true, None, now, None, Some(&one)),
            Decision::Retry(_)
        ));
        e.begin_attempt();
        assert_eq!(
            e.after_failure_alongside(None, |_, _| None, now, None, Some(&one)),
            Decision::Stop(GiveUpReason::BudgetExhausted)
        );
        assert_eq!(e.linger(), None, "copies in flight: the call goes on");
        e.succeeded(&one);
        assert_eq!(one.available(), 5, "the paid retry is still refunded");
    }

    #[test]
    fn a_hint_beyond_the_deadline_ends_the_call_and_says_so() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(5)
                .max_delay(5000 * MS)
                .max_elapsed(1000 * MS),
        );
        let t0 = Instant::now();
        let mut e = Engine::started(&p, || t0);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, Some(999 * MS), t0),
            Decision::Retry(999 * MS),
            "ends one millisecond before the deadline"
        );
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, Some(1000 * MS), t0),
            Decision::Stop(GiveUpReason::RetryAfterTooLong),
            "ends exactly at the deadline"
        );
        // Without a hint, the same sleep past the deadline is the deadline's doing.
        let mut e = Engine::started(&p, || t0);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, None, t0 + 950 * MS),
            Decision::Stop(GiveUpReason::DeadlineReached)
        );
    }

    #[test]
    fn no_sleep_starts_that_would_end_past_the_deadline() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(10)
                .max_elapsed(1000 * MS),
        );
        let t0 = Instant::now();
        let mut e = Engine::started(&p, || t0);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, None, t0 + 100 * MS),
            Decision::Retry(100 * MS)
        );
        e.begin_attempt();
        // 800 ms + 200 ms ends exactly at the deadline: refused.
        assert_eq!(
            e.after_failure(true, None, t0 + 800 * MS),
            Decision::Stop(GiveUpReason::DeadlineReached)
        );
    }

    #[test]
    fn a_sleep_may_end_one_nanosecond_before_the_deadline() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(10)
                .timeout(500 * MS)
                .max_elapsed(1000 * MS),
        );
        let ns = Duration::from_nanos(1);
        let t0 = Instant::now();
        let mut e = Engine::started(&p, || t0);
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, None, t0 + 900 * MS - ns),
            Decision::Retry(100 * MS)
        );
        // It wakes one nanosecond before the deadline: that is all the next attempt gets.
        assert_eq!(e.attempt_timeout(|| t0 + 1000 * MS - ns), Some(ns));
        assert_eq!(e.attempt_timeout(|| t0 + 1000 * MS), Some(Duration::ZERO));
        e.begin_attempt();
        assert_eq!(
            e.after_failure(true, None, t0 + 800 * MS),
            Decision::Stop(GiveUpReason::DeadlineReached),
            "800 + 200 ms ends exactly at the deadline"
        );
    }

    #[test]
    fn the_timeout_is_clipped_to_what_remains() {
        let p = policy(
            RetryPolicy::builder()
                .timeout(300 * MS)
                .max_elapsed(1000 * MS),
        );
        let t0 = Instant::now();
        let e = Engine::started(&p, || t0);
        assert_eq!(e.attempt_timeout(|| t0), Some(300 * MS));
        assert_eq!(e.attempt_timeout(|| t0 + 850 * MS), Some(150 * MS));
        assert_eq!(e.attempt_timeout(|| t0 + 2000 * MS), Some(Duration::ZERO));
        let untimed = policy(RetryPolicy::builder().max_elapsed(1000 * MS));
        assert_eq!(
            Engine::started(&untimed, || t0).attempt_timeout(|| t0),
            None
        );
    }

    #[test]
    fn the_clock_starts_at_the_first_failure_without_max_elapsed() {
        let p = policy(RetryPolicy::builder());
        let t0 = Instant::now();
        let mut e = Engine::started(&p, || unreachable!());
        assert_eq!(e.deadline(), None);
        e.begin_attempt();
        let _ = e.after_failure(true, None, t0 + 5 * MS);
        assert_eq!(e.start_or(|| unreachable!()), t0 + 5 * MS);
    }

    #[test]
    fn huge_limits_do_not_overflow() {
        let p = policy(
            RetryPolicy::builder()
                .max_attempts(RetryPolicy::MAX_ATTEMPTS)
                .max_delay(Duration::MAX)
                .max_elapsed(Duration::MAX)
                .multiplier(1e6),
        );
        let t0 = Instant::now();
        let mut e = Engine::started(&p, || t0);
        for _ in 0..100 {
            e.begin_attempt();
            assert!(matches!(
                e.after_failure(true, None, t0),
                Decision::Retry(_)
            ));
        }
    }

    #[test]
    fn an_inherited_deadline_bounds_sleeps_and_timeouts() {
        let p = policy(RetryPolicy::builder().max_attempts(10).timeout(500 * MS));
        let t0 = Instant::now();
        let mut e = Engine::started(&p, || t0);
        let inherited = Some(t0 + 250 * MS);
        assert_eq!(e.attempt_timeout_within(|| t0, inherited), Some(250 * MS));
        e.begin_attempt();
        assert_eq!(
            e.after_failure_within(true, None, t0 + 100 * MS, inherited, None),
            Decision::Retry(100 * MS)
        );
        e.begin_attempt();
        assert_eq!(
            e.after_failure_within(true, None, t0 + 100 * MS, inherited, None),
            Decision::Stop(GiveUpReason::DeadlineReached),
            "100 + 200 ms ends past the inherited 250 ms"
        );
    }

    #[test]
    fn a_retry_is_paid_from_the_budget_only_when_it_happens() {
        let p = policy(RetryPolicy::builder().max_attempts(3));
        let budget = RetryBudget::builder()
            .max_tokens(10)
            .retry_cost(5)
            .timeout_cost(10)
            .build()
            .unwrap();
        let now = Instant::now();
        let mut e = Engine::started(&p, || now);
        e.begin_attempt();
        assert!(matches!(
            e.after_failure_within(false, None, now, None, Some(&budget)),
            Decision::Stop(_)
        ));
        assert_eq!(budget.available(), 10, "no retry, no withdrawal");
        assert_eq!(
            e.after_failure_within(true, None, now, None, Some(&budget)),
            Decision::Retry(100 * MS)
        );
        assert_eq!(budget.available(), 5);
        e.begin_attempt();
        e.mark_timed_out();
        assert_eq!(
            e.after_failure_within(true, None, now, None, Some(&budget)),
            Decision::Stop(GiveUpReason::BudgetExhausted)
        );
        assert_eq!(budget.available(), 5, "a refusal takes nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn the_ratio_budget_earns_from_every_call_and_keeps_a_retried_successs_cost() {
        let p = policy(RetryPolicy::builder().max_attempts(3));
        let budget = RetryBudget::ratio(0.5).build().unwrap();
        let now = Instant::now();
        // Four calls whose attempts all fail: each earns half a retry with its first failure,
        // so every second one can retry once.
        let mut retried = Vec::new();
        for _ in 0..4 {
            let mut e = Engine::started(&p, || now);
            e.begin_attempt();
            // What `decide` does when an attempt ends, before the engine's rules.
            crate::engine::steps::first_attempt_ended(&e, Some(&budget), 0);
            let first = e.after_failure_within(true, None, now, None, Some(&budget));
            retried.push(matches!(first, Decision::Retry(_)));
            if retried[retried.len() - 1] {
                e.begin_attempt();
                crate::engine::steps::first_attempt_ended(&e, Some(&budget), 0);
                assert_eq!(
                    e.after_failure_within(true, None, now, None, Some(&budget)),
                    Decision::Stop(GiveUpReason::BudgetExhausted),
                    "a second attempt earns nothing"
                );
            }
        }
        assert_eq!(retried, [false, true, false, true]);
        // A call that succeeds after its retry keeps it paid for (the bucket would refund it).
        budget.deposit();
        let mut e = Engine::started(&p, || now);
        e.begin_attempt();
        crate::engine::steps::first_attempt_ended(&e, Some(&budget), 0);
        assert!(matches!(
            e.after_failure_within(true, None, now, None, Some(&budget)),
            Decision::Retry(_)
        ));
        e.begin_attempt();
        e.succeeded(&budget);
        assert_eq!(budget.available(), 0);
    }

    #[test]
    fn begin_starts_the_clock_clips_the_timeout_and_refuses_a_spent_deadline() {
        let p = policy(
            RetryPolicy::builder()
                .max_elapsed(300 * MS)
                .timeout(200 * MS),
        );
        let t0 = Instant::now();
        let mut e = Engine::new(&p);
        assert_eq!(e.deadline(), None, "no clock before the first attempt");
        assert_eq!(e.begin(true, || t0, None), Start::Run(Some(200 * MS)));
        assert_eq!(e.deadline(), Some(t0 + 300 * MS));
        e.mark_timed_out();
        assert!(e.timed_out());
        assert_eq!(
            e.begin(true, || t0 + 250 * MS, None),
            Start::Run(Some(50 * MS))
        );
        assert!(!e.timed_out(), "the flags are the last attempt's");
        assert_eq!(
            e.begin(true, || t0 + 100 * MS, Some(t0 + 100 * MS)),
            Start::NotMade,
            "an inherited deadline already reached"
        );
        assert!(e.not_made());
        assert_eq!(e.attempt(), 3);
        assert_eq!(
            e.begin(false, || unreachable!("untimed: no clock"), None),
            Start::Run(None),
            "an untimed attempt always runs"
        );
        assert!(!e.not_made());
    }

    #[test]
    fn would_run_agrees_with_begin() {
        let p = policy(
            RetryPolicy::builder()
                .max_elapsed(300 * MS)
                .timeout(200 * MS),
        );
        let t0 = Instant::now();
        let mut e = Engine::new(&p);
        assert!(
            e.would_run(true, || t0, None),
            "the first attempt starts the clock"
        );
        assert!(
            !e.would_run(true, || t0, Some(t0)),
            "an inherited deadline already reached"
        );
        assert!(
            e.would_run(false, || unreachable!(), Some(t0)),
            "untimed: always made"
        );
        assert_eq!(e.begin(true, || t0, None), Start::Run(Some(200 * MS)));
        for (at, made) in [(299, true), (300, false), (301, false)] {
            let now = t0 + at * MS;
            assert_eq!(e.would_run(true, || now, None), made, "at {at} ms");
            let mut copy = Engine::new(&p);
            copy.start_or(|| t0);
            assert_eq!(
                copy.begin(true, || now, None) != Start::NotMade,
                made,
                "at {at} ms"
            );
        }
        let untimed = policy(RetryPolicy::builder().timeout(200 * MS));
        let e = Engine::new(&untimed);
        assert!(e.would_run(true, || unreachable!("no deadline: no clock"), None));
    }

    #[test]
    fn without_max_elapsed_begin_reads_no_clock() {
        let p = policy(RetryPolicy::builder().timeout(200 * MS));
        let mut e = Engine::new(&p);
        assert_eq!(
            e.begin(true, || unreachable!(), None),
            Start::Run(Some(200 * MS))
        );
        assert_eq!(e.begin(false, || unreachable!(), None), Start::Run(None));
    }

    #[test]
    fn a_rejected_first_attempt_starts_the_clock_under_max_elapsed() {
        let t0 = Instant::now();
        let p = policy(RetryPolicy::builder().max_elapsed(300 * MS));
        let e = Engine::new(&p);
        e.rejected(|| t0);
        assert_eq!(e.deadline(), Some(t0 + 300 * MS));
        e.rejected(|| unreachable!("started already"));
        let untimed = policy(RetryPolicy::builder());
        Engine::new(&untimed).rejected(|| unreachable!("no max_elapsed: no clock"));
    }

    #[test]
    fn one_layer_defers_only_with_attempts_left_and_an_outer_retrier() {
        let p = policy(RetryPolicy::builder().max_attempts(2).one_layer(true));
        let mut e = Engine::new(&p);
        e.begin_attempt();
        assert!(e.defers_to_outer(true));
        assert!(!e.defers_to_outer(false));
        e.begin_attempt();
        assert!(
            !e.defers_to_outer(true),
            "no attempts left: exhausted, not deferred"
        );
        let plain = policy(RetryPolicy::builder().max_attempts(2));
        let mut e = Engine::new(&plain);
        e.begin_attempt();
        assert!(!e.defers_to_outer(true), "only when the policy opts in");
    }

    #[test]
    fn the_key_is_drawn_once() {
        let p = policy(RetryPolicy::builder());
        let e = Engine::started(&p, Instant::now);
        let k = e.idempotency_key();
        assert_eq!(e.idempotency_key(), k);
        assert_ne!(Engine::started(&p, Instant::now).idempotency_key(), k);
    }
}
