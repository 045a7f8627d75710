//! A call and its attempts as `tracing` spans (feature `spans`), with the attribute names of
//! OpenTelemetry's semantic conventions where they apply, so that a trace exported through
//! `tracing-opentelemetry` shows a retried call as its attempts:
//!
//! ```text
//! retry  (the call: otel.name = the call's name)
//! ├── attempt  reattempt.attempt = 1, error.type, otel.status_code = error
//! ├── backoff  reattempt.delay_ms = 100          (the sleep before the next attempt)
//! ├── attempt  reattempt.attempt = 2, http.request.resend_count = 1, …
//! └── …
//! ```
//!
//! - **The call's span** (`retry`) opens, named ([`Spans::open`], from each driver), when its
//!   first attempt is about to begin, as a child of the span current there, and closes when the
//!   call ends (or is dropped). Named before any attempt's span is made under it:
//!   `tracing-opentelemetry` fixes a span's name when its first child is made. `reattempt.name`,
//!   `reattempt.attempts`, and on a failure `error.type`, `reattempt.give_up_reason` and
//!   `otel.status_code = "error"`.
//! - **An attempt's span** (`attempt`) is a child of the call's, entered while the attempt is
//!   polled, so the spans the attempt's own code opens (an HTTP client's) are its children:
//!   `reattempt.attempt`, `reattempt.hedge` for a hedged copy, and on a failure `error.type`
//!   (the error's type), `reattempt.class` and `otel.status_code = "error"`. The drivers that
//!   know their protocol add its attributes (`http.request.resend_count`, `rpc.grpc.status_code`,
//!   gRFC A72's `previous-rpc-attempts` and `transparent-retry`, `server.address`): from inside
//!   the attempt (its request's copy, its transport) through `context::with_spans`, and an
//!   outcome's status, judged outside it, through [`note_attempt`], which the decision records.
//! - **The sleep** between attempts is a span of its own (`backoff`), `reattempt.delay_ms`.
//!
//! Nothing is paid where nobody listens: without the feature, [`Spans`] is an empty type whose
//! methods do nothing (a call's success path is the same code, instruction for instruction);
//! with it, a call whose span no subscriber wants holds no span and makes none after the first
//! question.

#[cfg(feature = "spans")]
pub(crate) use on::Spans;

#[cfg(not(feature = "spans"))]
pub(crate) use off::Spans;

/// What a driver that notes an attempt's status says its `error.type` is, should the attempt
/// fail: the status itself as a number (an HTTP response's `503`, as OpenTelemetry's HTTP
/// conventions have it), or a name (a gRPC status's `UNAVAILABLE`).
#[derive(Debug, Clone, Copy)]
#[allow(
    dead_code,
    reason = "each variant is one protocol driver's, compiled with its feature"
)]
pub(crate) enum ErrorType {
    Number,
    Name(&'static str),
}

/// What the spans are told when an attempt ends.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "spans"), allow(dead_code))]
pub(crate) enum Ended<'a> {
    /// It answered, and its answer was taken.
    Answered,
    /// It failed (or answered what is retried): the type of its error, and its class.
    Failed(&'a str, crate::ErrorClass),
}

#[cfg(not(feature = "spans"))]
mod off {
    use super::Ended;
    use crate::GiveUpReason;

    /// No spans: the feature `spans` is off, and every method does nothing.
    #[derive(Debug, Default)]
    pub(crate) struct Spans;

    #[allow(
        clippy::unused_self,
        clippy::inline_always,
        reason = "the same calls as with the feature on, compiled to nothing"
    )]
    impl Spans {
        pub(crate) const NONE: Spans = Spans;

        #[inline(always)]
        pub(crate) fn open(&mut self, _: impl FnOnce() -> &'static str) {}

        #[inline(always)]
        pub(crate) fn attempt_began(&mut self, _: u32) {}

        #[inline(always)]
        pub(crate) fn hedged(&mut self) {}

        #[inline(always)]
        pub(crate) fn attempt_ended(&mut self, _: u32, _: Ended<'_>) {}

        #[inline(always)]
        pub(crate) fn named(&mut self, _: impl FnOnce() -> &'static str) {}

        #[inline(always)]
        pub(crate) fn finished(&mut self, _: u32, _: Result<(), (&str, Option<GiveUpReason>)>) {}
    }
}

#[cfg(feature = "spans")]
mod on {
    use std::cell::Cell;
    use std::time::Duration;

    use tracing::field::Empty;
    use tracing::{Dispatch, Id, Span};

    use super::{Ended, ErrorType};
    use crate::GiveUpReason;

    /// The spans of one call: none until its first attempt begins, and none at all when no
    /// subscriber wants them.
    #[derive(Debug, Default)]
    pub(crate) struct Spans(Option<Box<Tree>>);

    impl Drop for Spans {
        /// Inline, so that a call without spans drops them with one test.
        #[inline]
        fn drop(&mut self) {
            if let Some(tree) = self.0.take() {
                close(tree);
            }
        }
    }

    /// Closes a call's spans (dropped before its end: the call was dropped).
    #[cold]
    #[inline(never)]
    fn close(tree: Box<Tree>) {
        drop(tree);
    }

    #[derive(Debug)]
    struct Tree {
        call: Span,
        /// The attempt begun last, by number, until it ends.
        attempt: (u32, Span),
        /// The sleep before the next attempt, until it begins.
        backoff: Span,
        /// A hedged call's earlier copies still in flight, by attempt number.
        copies: Vec<(u32, Span)>,
        /// Whether the call's span has its name.
        named: bool,
    }

    impl Tree {
        /// The span of attempt `attempt` (0: the one begun last), if it has not ended.
        fn attempt(&self, attempt: u32) -> Option<&Span> {
            if attempt == 0 || attempt == self.attempt.0 {
                return Some(&self.attempt.1);
            }
            self.copies
                .iter()
                .find(|(n, _)| *n == attempt)
                .map(|(_, span)| span)
        }
    }

    thread_local! {
        /// Why the call being decided on this thread gave up, noted by its give-up's event.
        static REASON: Cell<Option<GiveUpReason>> = const { Cell::new(None) };
    }

    thread_local! {
        /// A protocol's status of the attempt being decided on this thread (an HTTP response's
        /// status, a gRPC status), noted by its driver where it judges the outcome, for the
        /// attempt's span (see `steps::decide::spans`).
        static NOTED: Cell<Option<(&'static str, i64, ErrorType)>> = const { Cell::new(None) };
    }

    /// Notes `field = value` for the span of the attempt being decided on this thread.
    #[cfg_attr(
        not(any(
            all(feature = "tower", feature = "http"),
            feature = "reqwest-middleware",
            feature = "tonic"
        )),
        allow(dead_code, reason = "the protocol drivers' statuses")
    )]
    pub(crate) fn note_attempt(field: &'static str, value: i64, error_type: ErrorType) {
        NOTED.set(Some((field, value, error_type)));
    }

    /// Takes the attribute noted for the attempt being decided, if any.
    pub(crate) fn take_noted() -> Option<(&'static str, i64, ErrorType)> {
        NOTED.take()
    }

    /// Notes why a call gave up, for its span (see [`Spans::finished`]).
    pub(crate) fn note_give_up(reason: GiveUpReason) {
        REASON.set(Some(reason));
    }

    /// A call with spans begins a decision: what its give-up and its driver note from here on
    /// is its own (a note another call left, without spans or between this call's decisions,
    /// is forgotten).
    pub(crate) fn forget_notes() {
        REASON.set(None);
        NOTED.set(None);
    }

    /// Takes the reason noted by the give-up of the call being decided, if it gave up.
    pub(crate) fn take_give_up() -> Option<GiveUpReason> {
        REASON.take()
    }

    impl Spans {
        pub(crate) const NONE: Spans = Spans(None);

        /// Whether the call has spans: only then do its decisions tell them anything.
        #[inline]
        pub(crate) fn active(&self) -> bool {
            self.0.is_some()
        }

        /// The call's span, opened at its first attempt if a subscriber wants it.
        fn tree(&mut self) -> Option<&mut Tree> {
            if self.0.is_none() {
                // A give-up or a status noted by a call without spans is none of this one's.
                REASON.set(None);
                NOTED.set(None);
                let call = tracing::info_span!(
                    target: "reattempt",
                    "retry",
                    otel.name = Empty,
                    otel.kind = "internal",
                    otel.status_code = Empty,
                    reattempt.name = Empty,
                    reattempt.attempts = Empty,
                    reattempt.give_up_reason = Empty,
                    "error.type" = Empty,
                    http.request.method = Empty,
                    server.address = Empty,
                    server.port = Empty,
                    rpc.system = Empty,
                    rpc.service = Empty,
                    rpc.method = Empty,
                    rpc.grpc.status_code = Empty,
                );
                if call.is_disabled() {
                    return None;
                }
                self.0 = Some(Box::new(Tree {
                    call,
                    attempt: (0, Span::none()),
                    backoff: Span::none(),
                    copies: Vec::new(),
                    named: false,
                }));
            }
            self.0.as_deref_mut()
        }

        fn attempt_span(call: &Span, attempt: u32) -> Span {
            tracing::info_span!(
                target: "reattempt",
                parent: call,
                "attempt",
                otel.kind = "internal",
                otel.status_code = Empty,
                reattempt.attempt = attempt,
                reattempt.hedge = false,
                reattempt.class = Empty,
                "error.type" = Empty,
                http.request.resend_count = Empty,
                http.response.status_code = Empty,
                rpc.grpc.status_code = Empty,
                "previous-rpc-attempts" = Empty,
                "transparent-retry" = Empty,
            )
        }

        /// The call is about to begin its first attempt: its span opens, named (if a subscriber
        /// wants it). Named before any attempt's span is made under it: an OpenTelemetry
        /// exporter (`tracing-opentelemetry`) fixes a span's name when its first child is made,
        /// so a name recorded later (`named`, at the first decision) would not be exported.
        #[inline]
        pub(crate) fn open(&mut self, name: impl FnOnce() -> &'static str) {
            // Inline: no subscriber at the spans' level is one load and one test.
            if tracing::level_enabled!(tracing::Level::INFO) && self.tree().is_some() {
                self.named(name);
            }
        }

        /// Attempt `attempt` begins: the sleep before it ends, and its span opens. An attempt
        /// still in flight (a hedged call's) goes on beside it.
        #[inline]
        pub(crate) fn attempt_began(&mut self, attempt: u32) {
            // The first attempt's call span was asked for by `open` (every driver opens before
            // its first attempt): not asked again, so that a call no subscriber wants asks once;
            // a later attempt asks again if one may be wanted now (a subscriber installed since).
            // Inline: a call without spans pays a test or two.
            if self.0.is_some() || (attempt > 1 && tracing::level_enabled!(tracing::Level::INFO)) {
                self.open_attempt(attempt);
            }
        }

        #[inline(never)]
        fn open_attempt(&mut self, attempt: u32) {
            if let Some(tree) = self.tree() {
                tree.backoff = Span::none();
                let span = Self::attempt_span(&tree.call, attempt);
                let earlier = std::mem::replace(&mut tree.attempt, (attempt, span));
                if !earlier.1.is_none() {
                    tree.copies.push(earlier);
                }
            }
        }

        /// The attempt begun last is a hedge: a copy started while others run.
        pub(crate) fn hedged(&mut self) {
            if let Some(tree) = self.0.as_deref() {
                tree.attempt.1.record("reattempt.hedge", true);
            }
        }

        /// Attempt `attempt` (0: the one begun last) ended as `ended`: its span closes.
        pub(crate) fn attempt_ended(&mut self, attempt: u32, ended: Ended<'_>) {
            let Some(tree) = self.0.as_deref_mut() else {
                return;
            };
            let span = if attempt == 0 || attempt == tree.attempt.0 {
                std::mem::replace(&mut tree.attempt.1, Span::none())
            } else if let Some(at) = tree.copies.iter().position(|(n, _)| *n == attempt) {
                tree.copies.swap_remove(at).1
            } else {
                return;
            };
            if let Ended::Failed(error, class) = ended {
                span.record("error.type", error);
                span.record("reattempt.class", class.as_str());
                span.record("otel.status_code", "error");
            }
        }

        /// A retry sleeps `delay` before its attempt: the sleep's span opens.
        pub(crate) fn backoff(&mut self, delay: Duration) {
            if let Some(tree) = self.0.as_deref_mut() {
                tree.backoff = tracing::info_span!(
                    target: "reattempt",
                    parent: &tree.call,
                    "backoff",
                    otel.kind = "internal",
                    reattempt.delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                );
            }
        }

        /// Names the call's span, once (the name may cost a lookup: asked only with spans).
        pub(crate) fn named(&mut self, name: impl FnOnce() -> &'static str) {
            if let Some(tree) = self.0.as_deref_mut()
                && !tree.named
            {
                tree.named = true;
                let name = name();
                tree.call.record("otel.name", name);
                tree.call.record("reattempt.name", name);
            }
        }

        /// The call ended after `attempts` attempts: with its answer, or with an error of
        /// the type given (and the reason its give-up's event noted). Its attempts' and sleeps'
        /// spans close; its own stays open until the call's state is dropped, so that what its
        /// `#[recover]` fallback does is under it.
        pub(crate) fn finished(
            &mut self,
            attempts: u32,
            outcome: Result<(), (&str, Option<GiveUpReason>)>,
        ) {
            let Some(tree) = self.0.as_deref_mut() else {
                return;
            };
            tree.attempt = (0, Span::none());
            tree.backoff = Span::none();
            tree.copies.clear();
            tree.call.record("reattempt.attempts", attempts);
            if let Err((error, said)) = outcome {
                tree.call.record("error.type", error);
                tree.call.record("otel.status_code", "error");
                if let Some(reason) = said {
                    tree.call
                        .record("reattempt.give_up_reason", reason.to_string());
                }
            }
        }

        /// Records `value` on the span of attempt `attempt` (0: the one begun last): a
        /// driver's protocol attributes.
        pub(crate) fn record_attempt(&self, attempt: u32, field: &str, value: impl tracing::Value) {
            if let Some(span) = self.0.as_deref().and_then(|tree| tree.attempt(attempt)) {
                span.record(field, value);
            }
        }

        /// Records `value` on the call's span: a driver's protocol attributes.
        pub(crate) fn record_call(&self, field: &str, value: impl tracing::Value) {
            if let Some(tree) = self.0.as_deref() {
                tree.call.record(field, value);
            }
        }

        /// The span to enter while attempt `tag` is polled (0: the one begun last;
        /// `u32::MAX`: the call's fallback, in the call's span), entered now with the
        /// subscriber that made it, which must be told when it is left.
        #[inline]
        pub(crate) fn enter(&self, tag: u32) -> Option<Box<(Dispatch, Id)>> {
            // Inline, so that a call without spans pays one test.
            self.0.as_ref()?;
            self.enter_span(tag)
        }

        #[cold]
        #[inline(never)]
        fn enter_span(&self, tag: u32) -> Option<Box<(Dispatch, Id)>> {
            let tree = self.0.as_deref()?;
            let span = if tag == u32::MAX {
                &tree.call
            } else {
                tree.attempt(tag)?
            };
            span.with_subscriber(|(id, dispatch)| {
                dispatch.enter(id);
                // Boxed: the frame's guard holds a word, not the subscriber and the id.
                Box::new((dispatch.clone(), id.clone()))
            })
        }
    }
}

#[cfg(all(
    feature = "spans",
    any(
        all(feature = "tower", feature = "http"),
        feature = "reqwest-middleware",
        feature = "tonic"
    )
))]
pub(crate) use on::note_attempt;
#[cfg(feature = "spans")]
pub(crate) use on::{forget_notes, note_give_up, take_give_up, take_noted};
