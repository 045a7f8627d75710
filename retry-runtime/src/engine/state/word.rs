//! The engine's word: one `u32` per call holding the attempt counter above the flags of the
//! attempt that just ended and what the budget was paid for the last retry.

use crate::ErrorClass;
use crate::schedule::policy::RetryPolicy;

/// In the low six bits, what the budget was paid for the last retry (3 bits), the class of the
/// attempt that just ended (2 bits) and whether it was not made; above them, the attempt counter
/// (packed, so that the call's future does not grow; per call, so that no other call can see
/// them). The counter is on top so that starting an attempt is one addition that cannot carry
/// into the flags.
pub(super) const FLAG_BITS: u32 = 6;
const ATTEMPT_BITS: u32 = u32::BITS - FLAG_BITS;
const _: () = assert!(RetryPolicy::MAX_ATTEMPTS == (1 << ATTEMPT_BITS) - 1);
/// One attempt, in the counter's place.
pub(super) const ONE_ATTEMPT: u32 = 1 << FLAG_BITS;
/// The class of the attempt that just ended (`ErrorClass`): 0 transient (or no failure).
pub(super) const CLASS_MASK: u32 = 0b11 << 3;
/// The attempt that just ended timed out: the policy's `timeout` cut it, or its error says so.
pub(super) const TIMED_OUT: u32 = 1 << 3;
/// The attempt that just ended was throttled: its error says the server asked to slow down.
pub(super) const THROTTLED: u32 = 2 << 3;
/// The attempt that just ended was not made: no time remained.
pub(super) const NOT_MADE: u32 = 1 << 5;
/// What the budget was paid for the last retry.
pub(super) const PAID_MASK: u32 = 0b111;
/// The last retry was paid `retry_cost`.
pub(super) const PAID_RETRY: u32 = 1;
/// The last retry was paid `timeout_cost`.
pub(super) const PAID_TIMEOUT: u32 = 2;
/// The last payment was for a hedge: `retry_cost`, never paid back by the call's success.
pub(super) const PAID_HEDGE: u32 = 3;
/// The last retry was paid `throttling_cost`.
pub(super) const PAID_THROTTLING: u32 = 4;
/// The call gave up because only the budget refused its retry, under a long-polling policy: it
/// waits until `attempt_deadline` (no attempt follows, so the slot is free) before returning.
/// Nothing is paid then, and nothing is refunded after a give-up.
pub(super) const LINGERING: u32 = 5;

/// What a retry after an error of `class` is paid, as noted in the engine's word.
pub(super) const fn paid_for(class: ErrorClass) -> u32 {
    match class {
        ErrorClass::Transient => PAID_RETRY,
        ErrorClass::Timeout => PAID_TIMEOUT,
        ErrorClass::Throttling => PAID_THROTTLING,
    }
}

/// The class a payment noted in the engine's word was for (a hedge pays as a transient retry).
pub(super) const fn class_paid(paid: u32) -> ErrorClass {
    match paid {
        PAID_TIMEOUT => ErrorClass::Timeout,
        PAID_THROTTLING => ErrorClass::Throttling,
        _ => ErrorClass::Transient,
    }
}
