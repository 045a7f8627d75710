//! The arguments as read: what `valid` checks and `expand` writes from.

use std::collections::HashMap;

use proc_macro2::Span;
use retry_rules::PolicySettings;
use syn::{Expr, LitStr, Pat, Path};

/// The arguments, as read (`valid` checks them against each other and against the function).
pub(crate) struct RetryArgs {
    pub(crate) schedule: Schedule,
    pub(crate) retry_on: Option<Vec<Pat>>,
    pub(crate) no_retry_on: Option<Vec<Pat>>,
    pub(crate) retry_if: Option<Expr>,
    pub(crate) retry_if_ok: Option<Expr>,
    pub(crate) retry_after: Option<Expr>,
    pub(crate) delay_for: Option<Expr>,
    pub(crate) on_retry: Option<Expr>,
    pub(crate) recover: Option<Path>,
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Path,
    pub(crate) circuit_breaker: Option<Expr>,
    pub(crate) budget: Option<Expr>,
    pub(crate) policy: Option<Expr>,
    pub(crate) throttle: Option<Expr>,
    pub(crate) bulkhead: Option<Expr>,
    /// How the library's own failures become the function's error, when the error type has no
    /// conversion of its own (another crate's type): see `convert` in the runtime.
    pub(crate) into: Conversions,
    /// `resume` and the keys only a stream takes: the function returns a stream, resumed.
    pub(crate) stream: StreamArgs,
    /// Where each key was written (its name), for errors about the key as a whole.
    pub(crate) key_spans: HashMap<String, Span>,
}

/// The `…_into` keys: each a path or a closure that captures nothing, `fn(Failure) -> E`.
#[derive(Default)]
pub(crate) struct Conversions {
    pub(crate) timeout: Option<Expr>,
    pub(crate) breaker_open: Option<Expr>,
    pub(crate) throttled: Option<Expr>,
    pub(crate) bulkhead_full: Option<Expr>,
}

impl RetryArgs {
    /// Where `key` was written (the attribute, if it was not).
    pub(crate) fn key_span(&self, key: &str) -> Span {
        self.key_spans
            .get(key)
            .copied()
            .unwrap_or_else(Span::call_site)
    }
}

/// `resume = …` (which makes the function a stream's), `checkpoint = …`, and the stream's own
/// settings (`idle_timeout`, `progress_resets`, their spans in `Schedule::spans`).
#[derive(Default)]
pub(crate) struct StreamArgs {
    /// A closure `|after, item| …` (its first parameter names the checkpoint argument) or a path.
    pub(crate) resume: Option<Expr>,
    /// The checkpoint argument's name, beside a `resume` path.
    pub(crate) checkpoint: Option<Expr>,
    pub(crate) settings: retry_rules::StreamSettings,
}

/// The schedule keys that were given, with the span of each value.
#[derive(Default)]
pub(crate) struct Schedule {
    pub(crate) settings: PolicySettings,
    /// Where each key's value was written, for errors found later (a `timeout` on a blocking fn).
    pub(crate) spans: HashMap<&'static str, Span>,
}

impl Schedule {
    pub(crate) fn span_of(&self, key: &str) -> Span {
        self.spans.get(key).copied().unwrap_or_else(Span::call_site)
    }
}
