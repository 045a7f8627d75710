//! Why a call stopped retrying: the one word every layer reports a give-up with.
//!
//! A module of its own, below everything that names it: the engine's state decides it, the
//! events log it, the hooks and the guards hand it on; none of them needs the others for it.

/// Why a call stopped retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// The outcome is not one the call retries.
    NotRetryable,
    /// The retry budget could not pay for another retry. Under a long-polling policy
    /// ([`long_polling`](crate::RetryPolicyBuilder::long_polling)) the call returns once the
    /// delay that retry would have used is over.
    BudgetExhausted,
    /// The circuit breaker is open: the attempt was not made.
    BreakerOpen,
    /// `max_attempts` attempts were made.
    Exhausted,
    /// The next sleep would end at or past the `max_elapsed` deadline (the call's own, or one it
    /// inherited from an enclosing call), or no time remained to start the next attempt.
    DeadlineReached,
    /// The server asked to be left alone longer than the call may wait: its hint (`Retry-After`)
    /// is beyond `max_delay` (under the default [`HintMode::Floor`](crate::HintMode::Floor)), or
    /// the wait it asks for would end at or past the `max_elapsed` deadline. Coming back earlier
    /// than allowed would only be refused again.
    RetryAfterTooLong,
    /// The policy retries at one layer ([`one_layer`](crate::RetryPolicyBuilder::one_layer)) and
    /// an enclosing retrying call still has attempts left: it retries, this call does not.
    OuterRetries,
    /// The adaptive throttle rejected the attempt locally: it was not made.
    Throttled,
    /// The bulkhead had no free slot for the call (within its `max_wait`): no attempt was made.
    BulkheadFull,
    /// The attempt may have acted (a reset after the request was written, a timeout after
    /// sending: [`Effect::Unknown`](crate::Effect::Unknown)) and the call is not idempotent, so
    /// the crate's judgement does not repeat it (see [`Effect`](crate::Effect)).
    UnknownOutcome,
}

impl std::fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GiveUpReason::NotRetryable => "not retryable",
            GiveUpReason::Exhausted => "attempts exhausted",
            GiveUpReason::DeadlineReached => "max_elapsed reached",
            GiveUpReason::BudgetExhausted => "retry budget exhausted",
            GiveUpReason::BreakerOpen => "circuit breaker open",
            GiveUpReason::RetryAfterTooLong => {
                "server's Retry-After beyond max_delay or max_elapsed"
            }
            GiveUpReason::OuterRetries => "an enclosing call retries (one_layer)",
            GiveUpReason::Throttled => "throttled by the adaptive throttle",
            GiveUpReason::BulkheadFull => "bulkhead full",
            GiveUpReason::UnknownOutcome => "outcome unknown and the call is not idempotent",
        })
    }
}
