//! The engine's rules applied for a driver. A driver's loop is always the same four steps, and
//! each is one call here:
//!
//! 1. [`admit`]: ask the breaker for a permit, unless the attempt cannot be made anyway; a
//!    rejection is not an attempt, and goes straight to [`decide`] as the attempt's error;
//! 2. [`begin`] the attempt: it gets its time limit, or is not made (no time left);
//! 3. poll the attempt in the call's context, raced against its time limit (the driver's only
//!    job, with `drivers::timed`), and hand its outcome to [`decide`];
//! 4. sleep as long as [`decide`] says, or stop with what it returns.
//!
//! The deadline comes before the breaker: an attempt with no time left takes no permit and is not
//! rejected; it ends the call as `DeadlineReached`.
//!
//! The rooms, lowest first: [`begin`](mod@begin) (an attempt's start) < [`admit`](mod@admit)
//! (the guards' leave, the bulkhead's slot), [`fault`] (fault injection's plan) < [`decide`](mod@decide)
//! (what follows an outcome) < [`copies`] (the copies of a hedged call). This module only
//! re-exports them.

mod admit;
mod begin;
mod copies;
mod decide;
#[cfg(feature = "testing")]
mod fault;

pub use admit::{admit, poll_slot};
pub(crate) use admit::{slot_deadline, slot_wait_full};
pub use begin::begin;
pub(crate) use begin::{NotMade, begin_timed};
pub(crate) use copies::decide_copy_pending;
pub use copies::{CopyDecision, decide_copy, start_alongside};
pub use decide::{decide, decide_keeping, decide_rejected};
pub(crate) use decide::{decide_kept, first_attempt_ended};
// Drawn by the state; the drivers name it here, beside the steps that plan it.
#[cfg(feature = "testing")]
pub(crate) use crate::engine::state::Fault;
#[cfg(feature = "testing")]
pub(crate) use fault::{AfterWait, FaultPlan, after_fault_wait, fault, plan_fault};
