//! Leave to make an attempt: the bulkhead's slot, then the breaker and the throttle.

use tokio::time::Instant;

use super::begin::inherited_for;
use crate::engine::context;
use crate::engine::state::{self, Engine};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::bulkhead::{CallSlot, SlotSource};
use crate::guards::throttle::AdaptiveThrottle;
use crate::guards::{Admission, Admitted, ThrottleAdmission};

/// Asks a call's guards, in order, for leave to make the next attempt: the bulkhead first
/// (`full`: the call holds no slot, see [`poll_slot`]; then nothing else is asked); then,
/// unless the attempt cannot be made anyway (a `timed` attempt with no time left: see
/// [`Engine::would_run`], which then takes no permit and ends the call as `DeadlineReached`),
/// the circuit breaker, and the adaptive throttle unless the breaker rejected it.
///
/// The answer either lets the attempt run ([`Admitted::rejection`] is `None`: [`begin`](fn@super::begin) it) or
/// turns it away with a reason, which the driver converts into the call's error and hands to
/// [`decide`](fn@super::decide) (with [`Guards::admitted`](crate::guards::Guards::admitted)): the call ends with it, never retried.
///
/// ```
/// use reattempt::{AdaptiveThrottle, CircuitBreaker, GiveUpReason, RetryPolicy};
/// use retry_runtime::__private::{Engine, admit};
///
/// let policy = RetryPolicy::builder().build().unwrap();
/// let engine = Engine::new(&policy);
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let throttle = AdaptiveThrottle::builder().build().unwrap();
/// assert_eq!(admit(&engine, Some(&breaker), Some(&throttle), false, false).rejection(), None);
/// assert_eq!(throttle.counts(), (1, 0), "asked");
/// let full = admit(&engine, Some(&breaker), Some(&throttle), true, false);
/// assert_eq!(full.rejection(), Some(GiveUpReason::BulkheadFull));
/// assert_eq!(throttle.counts(), (1, 0), "not asked for a call the bulkhead turned away");
/// ```
#[inline]
pub fn admit(
    engine: &Engine<'_>,
    breaker: Option<&CircuitBreaker>,
    throttle: Option<&AdaptiveThrottle>,
    full: bool,
    timed: bool,
) -> Admitted {
    if full {
        return Admitted::FULL;
    }
    if (breaker.is_none() && throttle.is_none())
        || !engine.would_run(timed, Instant::now, inherited_for(timed))
    {
        return Admitted::NOT_ASKED;
    }
    let admission = match breaker {
        Some(breaker) => Admission::from(breaker.try_acquire()),
        None => Admission::NotAsked,
    };
    let throttled = match throttle {
        Some(throttle) if !admission.rejected() => ThrottleAdmission::from(throttle.try_acquire()),
        _ => ThrottleAdmission::NotAsked,
    };
    Admitted::asked(admission, throttled)
}

/// Takes the call's slot of `bulkhead` before its first attempt (a call already holding one, or
/// turned away, is left as it is): at once if one is free; otherwise, with the bulkhead's
/// `max_wait`, the driver polls the wait (`Pending` until a slot comes free or the wait ends);
/// without one, the call is turned away at once. `Ready(full)`: whether the call was turned
/// away (pass it to [`admit`]). The slot is held until the driver drops `slot`, at the call's
/// end, its sleeps included.
///
/// The wait never outlives the call's deadline: its own `max_elapsed` (whose clock starts with
/// the wait: the wait is part of the call) or an enclosing call's, whichever is earlier
/// (`slot_deadline`). A wait that ends without a slot ends the call as a spent deadline
/// does everywhere else: if the attempt could not be made now (`timed`, see
/// [`Engine::would_run`]), the call holds no slot (`CallSlot::Expired`), `Ready(false)`, and
/// [`begin`](fn@super::begin) finds no time left: the attempt is not made, and the call ends with the timeout's
/// error as `GiveUpReason::DeadlineReached`. A call whose attempt would run anyway (untimed:
/// no `timeout`, which a deadline never cuts) is turned away (`Ready(true)`, `BulkheadFull`):
/// it cannot run without a slot.
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use reattempt::Bulkhead;
///     use retry_runtime::__private::{CallSlot, poll_slot};
///
///     use reattempt::RetryPolicy;
///     use retry_runtime::__private::Engine;
///
///     let policy = RetryPolicy::builder().build().unwrap();
///     let engine = Engine::new(&policy);
///     let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
///     let mut slot = CallSlot::default();
///     let full = std::future::poll_fn(|cx| poll_slot(&bulkhead, &mut slot, &engine, false, cx)).await;
///     assert!(!full);
///     assert_eq!(bulkhead.in_flight(), 1);
///     let mut other = CallSlot::default();
///     assert!(std::future::poll_fn(|cx| poll_slot(&bulkhead, &mut other, &engine, false, cx)).await);
///     drop(slot);
///     assert_eq!(bulkhead.in_flight(), 0);
/// }
/// ```
#[allow(
    clippy::needless_pass_by_value,
    reason = "a source is a reference, or a cheap clone of an owner"
)]
pub fn poll_slot<'b, S: SlotSource<'b>>(
    bulkhead: S,
    slot: &mut CallSlot<'b, S::Permit>,
    engine: &Engine<'_>,
    timed: bool,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<bool> {
    loop {
        match slot {
            CallSlot::Held(_) | CallSlot::Expired => return std::task::Poll::Ready(false),
            CallSlot::Full => return std::task::Poll::Ready(true),
            CallSlot::Untaken => {
                *slot = match bulkhead.try_take() {
                    Err(_) if bulkhead.bulkhead().max_wait().is_some() => {
                        CallSlot::Waiting(bulkhead.wait(slot_deadline(engine)))
                    }
                    taken => CallSlot::from_acquired(taken),
                };
            }
            CallSlot::Waiting(wait) => {
                let taken = std::task::ready!(wait.as_mut().poll(cx));
                *slot = match taken {
                    Err(_) if !slot_wait_full(engine, timed) => CallSlot::Expired,
                    taken => CallSlot::from_acquired(taken),
                };
            }
        }
    }
}

/// The instant a call's wait for a bulkhead slot ends by, whatever the bulkhead's `max_wait`:
/// the earlier of the call's own deadline (its clock started now if its policy has
/// `max_elapsed` and it has not started: the wait is part of the call) and the enclosing calls'
/// ([`context::inherited_deadline`], whether or not the call's attempts are timed: a nested call
/// never waits past its caller's deadline). Read only when the call must wait.
pub(crate) fn slot_deadline(engine: &Engine<'_>) -> Option<Instant> {
    if engine.policy().max_elapsed().is_some() {
        engine.start_or(Instant::now);
    }
    state::earliest(engine.deadline(), context::inherited_deadline())
}

/// After a wait for a slot that ended without one (see [`poll_slot`]): whether the call is
/// turned away (`true`: its attempt would run, so the bulkhead's rejection ends it), or its
/// attempt cannot be made any more (`false`: no time is left; `begin` ends the call as
/// `DeadlineReached`).
pub(crate) fn slot_wait_full(engine: &Engine<'_>, timed: bool) -> bool {
    engine.would_run(timed, Instant::now, inherited_for(timed))
}
