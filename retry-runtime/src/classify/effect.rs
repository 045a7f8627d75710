//! What a failed attempt may have done, and whether the call may be repeated after it.
//!
//! A failure either proves that nothing was done (the request was never sent, or the server
//! refused it, or rolled it back), or leaves the outcome unknown (a reset, a broken pipe or an
//! EOF after the request was written, a timeout after sending, a 500, a COMMIT in flight):
//! repeating the action after an unknown outcome can do it twice (RFC 9110 §9.2.2 says it for
//! HTTP; it holds for gRPC, databases and brokers alike). The rule, the same in every driver:
//!
//! - **the crate's own judgement** ([`transient`](crate::transient), the `Transient` impls the
//!   crate ships, every error when no predicate is given, and a per-attempt `timeout`) retries
//!   an unknown outcome only on a call that is safe to repeat (`idempotent`);
//! - **a rule the user wrote** (`retry_on = [..]`, `retry_if = my_fn` that does not ask the
//!   crate) is obeyed as written.
//!
//! The engine asks the call's retry predicate inside a *judgement* ([`judging`]) that knows
//! whether the call is idempotent and whether the policy's `timeout` cut the attempt; the crate's
//! classifications consult it through [`may_repeat`]. Outside a judgement (a `Transient` impl
//! asked in a user's own code, a test) nothing is refused: the classification is the error's
//! alone.

use std::any::TypeId;
use std::cell::Cell;

use super::class::ErrorClass;

/// What a failed attempt may have done: whether it proves that nothing was done, or leaves the
/// outcome unknown. [`Transient::effect`](crate::Transient::effect) says it of an error; retry
/// events carry it (field `effect`).
///
/// | effect | means | examples |
/// |---|---|---|
/// | [`NotDone`](Effect::NotDone) | the action did not happen: never sent, refused before it was processed, or rolled back | connection refused, a connect error (reqwest's, tonic's), a pool timeout before a connection was had, HTTP 429 and 408, SQLSTATE `40001` and `40P01` |
/// | [`Unknown`](Effect::Unknown) | the action may have happened | a reset, broken pipe or EOF after the request was written, a timeout after sending, HTTP 500, 502, 503, 504, a connection lost while a COMMIT was in flight |
/// | [`Unstated`](Effect::Unstated) | the error's type does not say | the default of `Transient::effect` for your own types: your `is_transient` is taken as written |
///
/// The crate's own judgement ([`transient`](crate::transient), a per-attempt `timeout`, and a
/// call with no `retry_on`/`retry_if`) retries an `Unknown` effect only on a call that is
/// idempotent (`#[retryable(idempotent = true)]`, the closure API's and the client drivers'
/// `.idempotent(true)`, [`RetryPolicyBuilder::idempotent`](crate::RetryPolicyBuilder::idempotent);
/// for HTTP, RFC 9110's method rule and an `Idempotency-Key` header). A predicate you wrote
/// yourself is obeyed as written.
///
/// ```
/// use std::io::{Error, ErrorKind};
/// use reattempt::{Effect, Transient};
///
/// assert_eq!(Error::from(ErrorKind::ConnectionRefused).effect(), Effect::NotDone);
/// assert_eq!(Error::from(ErrorKind::ConnectionReset).effect(), Effect::Unknown);
/// assert_eq!(Effect::Unknown.as_str(), "unknown");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Effect {
    /// The action did not happen: the request was never sent, refused before it was
    /// processed, or rolled back. Repeating it cannot do it twice.
    NotDone,
    /// The action may have happened: repeating it may do it twice.
    Unknown,
    /// The error's type does not say (the default of
    /// [`Transient::effect`](crate::Transient::effect)).
    #[default]
    Unstated,
}

impl Effect {
    /// The effect's name in events: `not_done`, `unknown` or `unstated`.
    ///
    /// ```
    /// assert_eq!(reattempt::Effect::NotDone.as_str(), "not_done");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::NotDone => "not_done",
            Effect::Unknown => "unknown",
            Effect::Unstated => "unstated",
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The judgement in progress on this thread: set by [`judging`] around a call's retry
/// predicate, read by [`may_repeat`].
#[derive(Debug, Clone, Copy)]
struct Judgement {
    /// The call may be repeated after an unknown outcome.
    idempotent: bool,
    /// The policy's `timeout` cut the attempt: whatever its error says, it may have acted.
    timed_out: bool,
    /// The effect the crate's classification saw (the last one asked), if it was asked.
    seen: Option<Effect>,
    /// The crate's judgement refused a retry for an unknown outcome.
    refused: bool,
    /// The class ([`Transient::class`](crate::Transient::class)) of the error the crate's
    /// judgement ([`transient`](crate::transient)) was last asked about, if it was asked: the
    /// class of a call whose hooks state none (see [`judged_class`]).
    class: Option<ErrorClass>,
    /// Whose class may be noted ([`Subject`]).
    subject: Subject,
}

/// What a judgement judges, for the class it keeps ([`note_class`]): a class belongs to the type
/// it was noted for, so that a class noted for an inner cause (`transient(&e.source)`, a
/// wrapper's `is_transient` asking the `StatusCode` it holds) never becomes the outer error's,
/// whose class is the one its own type states, in every driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// An error of the type whose identities (without lifetimes: `typeid`) these are: the type
    /// and a reference to it (`|e| transient(&e)` asks it of `&E`, whose class is `E`'s).
    Error([TypeId; 2]),
    /// An `Ok` value `retry_if_ok` judges (a response): its type states no class of its own, so
    /// the class of what the predicate asked (its status) is kept, whatever its type.
    Value,
}

impl Subject {
    /// An error of type `E`.
    #[inline]
    pub(crate) fn error<E: ?Sized>() -> Self {
        Subject::Error([typeid::of::<E>(), typeid::of::<&E>()])
    }

    /// Whether a class noted for a value of type `X` is the subject's.
    #[inline]
    fn owns<X: ?Sized>(self) -> bool {
        match self {
            Subject::Error(ids) => ids.contains(&typeid::of::<X>()),
            Subject::Value => true,
        }
    }
}

thread_local! {
    static JUDGEMENT: Cell<Option<Judgement>> = const { Cell::new(None) };
}

/// What a judgement found (see [`judging`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Verdict {
    /// The effect the crate's classification saw, or [`Effect::Unknown`] when the policy's
    /// `timeout` cut the attempt, or [`Effect::Unstated`].
    pub(crate) effect: Effect,
    /// The crate's judgement refused a retry because the outcome is unknown and the call is not
    /// idempotent.
    pub(crate) refused: bool,
}

/// Runs `judge` (a call's retry predicate) inside a judgement of a call that is `idempotent` or
/// not, whose attempt the policy's `timeout` cut or not: the crate's classifications asked
/// inside it refuse an unknown outcome on a call that is not idempotent ([`may_repeat`]).
/// Gives `judge`'s answer and what the judgement found. Judgements nest (a predicate that runs a
/// retrying call of its own): the outer one is restored after. Of an `Ok` value
/// ([`judging_about`] names the subject).
#[cfg(test)]
pub(crate) fn judging<R>(
    idempotent: bool,
    timed_out: bool,
    judge: impl FnOnce() -> R,
) -> (R, Verdict) {
    judging_about(Subject::Value, idempotent, timed_out, judge)
}

/// [`judging`], of `subject`: the class noted for it is kept ([`note_class`]).
pub(crate) fn judging_about<R>(
    subject: Subject,
    idempotent: bool,
    timed_out: bool,
    judge: impl FnOnce() -> R,
) -> (R, Verdict) {
    /// Puts the outer judgement back when dropped, even if the predicate panics.
    struct Scope(Option<Judgement>);
    impl Drop for Scope {
        fn drop(&mut self) {
            JUDGEMENT.with(|j| j.set(self.0));
        }
    }
    let scope = Scope(JUDGEMENT.with(|j| {
        j.replace(Some(Judgement {
            idempotent,
            timed_out,
            seen: None,
            refused: false,
            class: None,
            subject,
        }))
    }));
    let answer = judge();
    let mine = JUDGEMENT.with(Cell::get);
    drop(scope);
    let verdict = match mine {
        Some(j) => Verdict {
            effect: if j.timed_out {
                Effect::Unknown
            } else {
                j.seen.unwrap_or(Effect::Unstated)
            },
            refused: j.refused,
        },
        None => Verdict::default(),
    };
    (answer, verdict)
}

/// Runs `classify` (a classification) inside the judgement in progress as if the call were
/// idempotent, so that it says only whether the failure is transient, and the effect it saw is
/// still noted: for the HTTP client drivers, whose safety rule (RFC 9110's methods, an
/// `Idempotency-Key`, a request-aware hook) decides about repeating on its own, from the
/// request. If that rule then refuses a transient failure, the driver says so with
/// [`note_refused`].
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn classify_only<R>(classify: impl FnOnce() -> R) -> R {
    /// Puts the call's own word back when dropped.
    struct Scope(Option<bool>);
    impl Drop for Scope {
        fn drop(&mut self) {
            if let Some(idempotent) = self.0 {
                JUDGEMENT.with(|j| {
                    if let Some(mut judgement) = j.get() {
                        judgement.idempotent = idempotent;
                        j.set(Some(judgement));
                    }
                });
            }
        }
    }
    let scope = Scope(JUDGEMENT.with(|j| {
        let mut judgement = j.get()?;
        let said = judgement.idempotent;
        judgement.idempotent = true;
        j.set(Some(judgement));
        Some(said)
    }));
    let answer = classify();
    drop(scope);
    answer
}

/// Notes, in the judgement in progress, that a transient failure is not repeated because its
/// outcome is unknown and the request is not safe to repeat (HTTP's safety rule): the call
/// gives up with [`GiveUpReason::UnknownOutcome`](crate::GiveUpReason::UnknownOutcome).
#[cfg(any(
    all(feature = "tower", feature = "http"),
    feature = "reqwest-middleware"
))]
pub(crate) fn note_refused() {
    JUDGEMENT.with(|j| {
        if let Some(mut judgement) = j.get() {
            judgement.refused = true;
            j.set(Some(judgement));
        }
    });
}

/// Notes, in the judgement in progress, the class of `of`, an error the crate's judgement is
/// asked about ([`transient`](crate::transient) calls it): hooks that state no class use it.
/// Kept only when `of` is of the judged error's type ([`Subject`]): the class of an inner cause
/// is not the outer error's. Outside a judgement, or for another type, nothing (`class` is not
/// even asked).
#[inline]
pub(crate) fn note_class<X: ?Sized>(of: &X, class: impl FnOnce() -> ErrorClass) {
    let _ = of;
    JUDGEMENT.with(|j| {
        if let Some(mut judgement) = j.get()
            && judgement.subject.owns::<X>()
        {
            judgement.class = Some(class());
            j.set(Some(judgement));
        }
    });
}

/// [`note_class`], unless a class was noted already in this judgement: for a driver that knows
/// the class of an outcome's type (an HTTP response's status) and asks after the user's
/// predicate, which may have noted one of its own.
#[cfg(all(feature = "tower", feature = "http"))]
#[inline]
pub(crate) fn note_class_unless_noted<X: ?Sized>(of: &X, class: impl FnOnce() -> ErrorClass) {
    if judged_class().is_none() {
        note_class(of, class);
    }
}

/// `answer` (a `Transient` impl's `is_transient`), with the error's `class` noted
/// ([`note_class`]): how the crate's own impls end, so that `.retry_if(|e| e.is_transient())` on
/// the crate's types tells the class as [`transient`](crate::transient) does.
#[inline]
pub(crate) fn noting_class<X: ?Sized>(
    of: &X,
    class: impl FnOnce() -> ErrorClass,
    answer: bool,
) -> bool {
    note_class(of, class);
    answer
}

/// The class the crate's judgement noted in the judgement in progress ([`note_class`]): what
/// [`Hooks::class`](crate::Hooks::class) falls back to when the hooks state no class. `None`
/// outside a judgement, or when the call's predicate did not ask the crate about the judged error
/// itself (a rule the user wrote, a question about an inner cause only, or no `retry_if` at all:
/// nothing is known of the error's own class then). The engine asks
/// the hooks' `class` inside the same judgement as their `retry_if`, for the same error, and the
/// judgement ends (the outer one restored) before anything is awaited, so a class noted for one
/// error never reaches another call, another task, or the next attempt.
#[inline]
pub(crate) fn judged_class() -> Option<ErrorClass> {
    JUDGEMENT.with(|j| j.get().and_then(|judgement| judgement.class))
}

/// The crate's `Transient` impls whose table is their effect: transient when the effect is
/// stated (`Unstated` is the rest of the type: not transient), and then repeated as
/// [`may_repeat`] says. The effect is worked out once, by the caller.
pub(crate) fn transient_by_effect(effect: Effect) -> bool {
    effect != Effect::Unstated && may_repeat(effect)
}

/// Whether an action whose failure had `effect` may be repeated, by the crate's judgement: yes
/// for [`Effect::NotDone`] and [`Effect::Unstated`]; for [`Effect::Unknown`] only on a call that
/// is idempotent. Inside a judgement whose attempt the policy's `timeout` cut, every effect is
/// unknown. Outside any judgement (asked from a user's own code), yes: the classification is the
/// error's alone. Notes what it saw, for the retry event and the give-up reason.
///
/// The crate's `Transient` impls end their `is_transient` with it; a `Transient` impl of your
/// own may too, to follow the rule for errors it wraps:
///
/// ```
/// use reattempt::{Effect, Transient};
///
/// #[derive(Debug)]
/// enum StoreError { Unavailable, ConnectionLost }
/// impl Transient for StoreError {
///     fn is_transient(&self) -> bool {
///         reattempt::may_repeat(self.effect())
///     }
///     fn effect(&self) -> Effect {
///         match self {
///             StoreError::Unavailable => Effect::NotDone,
///             StoreError::ConnectionLost => Effect::Unknown,
///         }
///     }
/// }
/// // Outside a retrying call nothing is refused:
/// assert!(StoreError::ConnectionLost.is_transient());
/// ```
pub fn may_repeat(effect: Effect) -> bool {
    JUDGEMENT.with(|j| {
        let Some(mut judgement) = j.get() else {
            return true;
        };
        let effect = if judgement.timed_out {
            Effect::Unknown
        } else {
            effect
        };
        judgement.seen = Some(effect);
        let yes = effect != Effect::Unknown || judgement.idempotent;
        judgement.refused |= !yes;
        j.set(Some(judgement));
        yes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_judgement_nothing_is_refused() {
        assert!(may_repeat(Effect::Unknown));
        assert!(may_repeat(Effect::NotDone));
    }

    #[test]
    fn an_unknown_outcome_is_repeated_only_on_an_idempotent_call() {
        for (idempotent, effect, yes) in [
            (false, Effect::Unknown, false),
            (true, Effect::Unknown, true),
            (false, Effect::NotDone, true),
            (false, Effect::Unstated, true),
        ] {
            let (answer, verdict) = judging(idempotent, false, || may_repeat(effect));
            assert_eq!(answer, yes, "{idempotent} {effect}");
            assert_eq!(verdict.refused, !yes);
            assert_eq!(verdict.effect, effect);
        }
    }

    #[test]
    fn a_timed_out_attempt_is_an_unknown_outcome() {
        let (answer, verdict) = judging(false, true, || may_repeat(Effect::NotDone));
        assert!(!answer);
        assert_eq!(
            verdict,
            Verdict {
                effect: Effect::Unknown,
                refused: true
            }
        );
        // A predicate that does not ask the crate is obeyed, but the effect is still reported.
        let (answer, verdict) = judging(false, true, || true);
        assert!(answer);
        assert_eq!(
            verdict,
            Verdict {
                effect: Effect::Unknown,
                refused: false
            }
        );
    }

    #[test]
    fn a_predicate_of_the_users_own_is_obeyed() {
        let (answer, verdict) = judging(false, false, || true);
        assert!(answer);
        assert_eq!(
            verdict,
            Verdict {
                effect: Effect::Unstated,
                refused: false
            }
        );
    }

    #[test]
    fn a_class_noted_belongs_to_its_judgement_alone() {
        use crate::ErrorClass::{Throttling, Timeout};
        note_class(&(), || Throttling);
        assert_eq!(judged_class(), None, "outside a judgement nothing is kept");
        let ((), _) = judging(false, false, || {
            assert_eq!(judged_class(), None, "a judgement starts knowing nothing");
            note_class(&(), || Throttling);
            let ((), _) = judging(false, false, || {
                assert_eq!(judged_class(), None, "nor does a nested one");
                note_class(&(), || Timeout);
                assert_eq!(judged_class(), Some(Timeout));
            });
            assert_eq!(
                judged_class(),
                Some(Throttling),
                "the outer one's is restored"
            );
        });
        assert_eq!(judged_class(), None, "nothing left for the next judgement");
        let ((), _) = judging(false, false, || assert_eq!(judged_class(), None));
    }

    #[test]
    fn an_errors_judgement_keeps_the_class_noted_for_its_own_type_alone() {
        use crate::ErrorClass::{Throttling, Timeout};
        struct Outer;
        struct Inner;
        let ((), _) = judging_about(Subject::error::<Outer>(), false, false, || {
            note_class(&Inner, || Throttling);
            assert_eq!(
                judged_class(),
                None,
                "an inner cause's class is not the error's"
            );
            note_class(&Outer, || Timeout);
            note_class(&Inner, || Throttling);
            assert_eq!(
                judged_class(),
                Some(Timeout),
                "the error's own, over a later inner one"
            );
            note_class(&&Outer, || Throttling);
            assert_eq!(
                judged_class(),
                Some(Throttling),
                "a reference to it is the error"
            );
        });
        // An `Ok` value's judgement keeps what its predicate asked (a response's status).
        let ((), _) = judging(false, false, || {
            note_class(&Inner, || Throttling);
            assert_eq!(judged_class(), Some(Throttling));
        });
    }

    #[test]
    fn judgements_nest_and_restore() {
        let ((), outer) = judging(true, false, || {
            let (inner, v) = judging(false, false, || may_repeat(Effect::Unknown));
            assert!(!inner && v.refused);
            assert!(may_repeat(Effect::Unknown), "the outer call is idempotent");
        });
        assert!(!outer.refused);
        assert!(may_repeat(Effect::Unknown), "no judgement left behind");
    }
}
