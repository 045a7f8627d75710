//! What a decision tells the call's spans (feature `spans`): the attempt's end, the sleep, and
//! the call's end. Out of line: the rules stay the code they are without spans.

use std::any::type_name;
use std::borrow::Cow;
use std::time::Duration;

use crate::GiveUpReason;
use crate::engine::events::CallName;
use crate::engine::spans::{Ended, ErrorType, take_give_up, take_noted};
use crate::engine::state::{Decision, Engine};

/// What followed an attempt, as the spans see it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Next {
    /// A sleep, then another attempt.
    Retry(Duration),
    /// The call ended with the attempt's answer (unless its give-up's event said otherwise).
    Answered,
    /// The call ended with the attempt's failure.
    Failed,
    /// The call goes on with other copies in flight.
    Wait,
}

/// Attempt `number` (0: the current one) ended (`failed`: with an `Err`), and the engine
/// decided.
#[inline(never)]
pub(crate) fn decided<T, E, N: CallName>(
    engine: &mut Engine<'_>,
    name: N,
    number: u32,
    failed: bool,
    decision: &Decision<Result<T, E>>,
) {
    let next = match decision {
        Decision::Retry(delay) => Next::Retry(*delay),
        Decision::Stop(Ok(_)) => Next::Answered,
        Decision::Stop(Err(_)) => Next::Failed,
    };
    tell(engine, name, number, failure_type::<T, E>(failed), next);
}

/// A hedged call's copy `number` ended (`failed`: with an `Err`), and what follows it.
#[inline(never)]
pub(crate) fn copy_decided<T, E, N: CallName>(
    engine: &mut Engine<'_>,
    name: N,
    number: u32,
    failed: bool,
    next: Next,
) {
    tell(engine, name, number, failure_type::<T, E>(failed), next);
}

/// An attempt a guard turned away (`reason`): the call ends with the rejection's error, or
/// (`answered`) a value kept from before.
#[inline(never)]
pub(crate) fn rejected<T, E, N: CallName>(
    engine: &mut Engine<'_>,
    name: N,
    reason: Option<GiveUpReason>,
    answered: bool,
) {
    let _noted = take_give_up();
    let _status = take_noted();
    engine.spans.named(|| name.name());
    let attempts = engine.attempt();
    let error = failure_type::<T, E>(!answered);
    engine.spans.finished(attempts, Err((error, reason)));
}

/// The type an attempt's failure is told by: its error's, or (an `Ok` retried or given up on)
/// its value's.
fn failure_type<T, E>(failed: bool) -> &'static str {
    if failed {
        type_name::<E>()
    } else {
        type_name::<T>()
    }
}

fn tell<N: CallName>(
    engine: &mut Engine<'_>,
    name: N,
    number: u32,
    error: &'static str,
    next: Next,
) {
    // Noted by the give-up's event, in this decision (the notes were forgotten at its start):
    // taken here whatever follows.
    let gave_up = take_give_up();
    // The attempt's status as its driver noted it (an HTTP response's, a gRPC status): taken
    // likewise, recorded before its span closes.
    let status = take_noted();
    engine.spans.named(|| name.name());
    // A failure with a protocol's status is told as its driver said: OpenTelemetry's
    // conventions name an HTTP response's status code ("503"), a gRPC status's name.
    let told = status.map(|(_, value, kind)| match kind {
        ErrorType::Number => Cow::Owned(value.to_string()),
        ErrorType::Name(name) => Cow::Borrowed(name),
    });
    let error = told.as_deref().unwrap_or(error);
    let failure = Ended::Failed(error, engine.class());
    let attempts = engine.attempt();
    let spans = &mut engine.spans;
    if let Some((field, value, _)) = status {
        spans.record_attempt(number, field, value);
        if !matches!(next, Next::Retry(_) | Next::Wait) {
            // The call's status is its last attempt's, where the call's span has the field
            // (a gRPC call's `rpc.grpc.status_code`; recording a field a span lacks does
            // nothing).
            spans.record_call(field, value);
        }
    }
    match next {
        Next::Retry(delay) => {
            spans.attempt_ended(number, failure);
            spans.backoff(delay);
        }
        Next::Wait => spans.attempt_ended(number, failure),
        Next::Answered if gave_up.is_none() => {
            spans.attempt_ended(number, Ended::Answered);
            spans.finished(attempts, Ok(()));
        }
        Next::Answered | Next::Failed => {
            spans.attempt_ended(number, failure);
            spans.finished(attempts, Err((error, gave_up)));
        }
    }
}
