//! The layer's hooks: [`Classify`], the classification its builder methods fill, and the
//! request-aware wrapper a call drives the engine with ([`ReadyAware`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::replay::RetryRequest;
use crate::ErrorClass;
use crate::engine::context::RetryContext;
use crate::engine::hooks::{ClassHook, DelayHook, ErrorHook, Hooks, OkHook, OnRetryHook, Unset};
use crate::engine::hooks_forward::{ForwardHooks, forward_hooks};

/// The layer's hooks, one slot per hook, each [`Unset`] (the attribute's default) until given:
/// what [`RetryLayer::retry_if`] and its siblings fill. Unlike [`FnHooks`](crate::FnHooks) it
/// names no outcome type: the closures' argument types say it (`|e: &io::Error| …`).
///
/// [`RetryLayer::retry_if`]: super::layer::RetryLayer::retry_if
#[derive(Debug, Clone, Copy, Default)]
pub struct Classify<
    RetryIf = Unset,
    RetryIfOk = Unset,
    RetryAfter = Unset,
    RetryAfterOk = Unset,
    OnRetry = Unset,
    TimeoutIf = Unset,
> {
    pub(super) retry_if: RetryIf,
    pub(super) retry_if_ok: RetryIfOk,
    pub(super) retry_after: RetryAfter,
    pub(super) retry_after_ok: RetryAfterOk,
    pub(super) on_retry: OnRetry,
    pub(super) timeout_if: TimeoutIf,
}

impl<T, E, A, B, C, D, N, F> Hooks<T, E> for Classify<A, B, C, D, N, F>
where
    A: ErrorHook<E, bool>,
    B: OkHook<T>,
    C: DelayHook<E>,
    D: DelayHook<T>,
    N: OnRetryHook<E>,
    F: ClassHook<E>,
{
    #[inline]
    fn retry_if(&mut self, error: &E) -> bool {
        // Unset: every error, by the crate's judgement (see `Hooks::retry_if`).
        self.retry_if
            .call(error)
            .unwrap_or_else(|| crate::may_repeat(crate::Effect::Unstated))
    }

    #[inline]
    fn retry_if_ok(&mut self, value: &T) -> bool {
        self.retry_if_ok.call(value).unwrap_or(false)
    }

    #[inline]
    fn retries_ok(&self) -> bool {
        B::SET
    }

    #[inline]
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        self.retry_after.hint(error)
    }

    #[inline]
    fn delay_for(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        self.retry_after.choose(error, attempt, computed)
    }

    #[inline]
    fn retry_after_ok(&mut self, value: &T) -> Option<Duration> {
        self.retry_after_ok.hint(value)
    }

    #[inline]
    fn delay_for_ok(&mut self, value: &T, attempt: u32, computed: Duration) -> Option<Duration> {
        self.retry_after_ok.choose(value, attempt, computed)
    }

    #[inline]
    fn ok_failed(&mut self, value: &T) -> bool {
        self.retry_if_ok.failed(value)
    }

    #[inline]
    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        self.on_retry.call(error, context, delay);
    }

    #[inline]
    fn is_timeout(&mut self, error: &E) -> bool {
        self.class(error) == ErrorClass::Timeout
    }

    #[inline]
    fn class(&mut self, error: &E) -> ErrorClass {
        self.timeout_if
            .class(error)
            .unwrap_or_else(crate::engine::hooks::judged_class)
    }

    #[inline]
    fn class_ok(&mut self, value: &T) -> ErrorClass {
        self.retry_if_ok
            .class(value)
            .unwrap_or_else(crate::engine::hooks::judged_class)
    }
}

/// The layer's hooks: the user's, except after a `poll_ready` error (`failed`). A service whose
/// `poll_ready` failed has failed for good (tower's contract: it must not be polled again), so
/// the call ends with that error, as tower's own `Retry` does: it is never retried, and counts
/// as a failure for the breaker (as a timeout does: the dependency did not answer).
///
/// It also asks the layer's [`RetryRequest`] (`rule`, its replay slot) about each outcome, with
/// the caller's `request`.
pub(super) struct ReadyAware<'h, H, Req, R> {
    pub(super) hooks: &'h mut H,
    pub(super) failed: &'h AtomicBool,
    pub(super) request: &'h Req,
    pub(super) rule: &'h R,
    /// The classification's answer for the last error (`retry_if`), which `error_failed` reads
    /// rather than asking again: a classification may count what it sees (gRPC's throttle).
    pub(super) classified: bool,
}

impl<H, Req, R> ReadyAware<'_, H, Req, R> {
    #[inline]
    fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether `error` is a copy's the replay cap left behind ([`RetryRequest::left_behind`]).
    #[inline]
    fn left_behind<T, E>(&self, error: &E) -> bool
    where
        R: RetryRequest<Req, T, E>,
    {
        self.rule.left_behind(self.request, error)
    }
}

// The answers the request changes are written out below; every other hook reaches the user's
// hooks through `ForwardHooks` (so that a hook added to `Hooks` later cannot be dropped here).
impl<T, E, H: Hooks<T, E>, Req, R: RetryRequest<Req, T, E>> ForwardHooks<T, E>
    for ReadyAware<'_, H, Req, R>
{
    type Inner = H;

    fn inner(&mut self) -> &mut H {
        self.hooks
    }

    fn inner_ref(&self) -> &H {
        self.hooks
    }

    /// Always `true`: the request's rule judges every response, whatever the user's hooks say.
    fn retries_ok(&self) -> bool {
        true
    }

    #[inline]
    fn retry_if(&mut self, error: &E) -> bool {
        if self.failed() {
            return false;
        }
        if self.left_behind(error) {
            // The client's own doing: the copy holding the body answers (the cap refuses the
            // retry); the classification never sees it.
            self.classified = false;
            return true;
        }
        // HTTP's safety rule decides about repeating from the request (`retry_request`): the
        // classification says only whether the failure is transient.
        let retryable = if self.rule.judges_safety() {
            crate::classify::effect::classify_only(|| self.hooks.retry_if(error))
        } else {
            self.hooks.retry_if(error)
        };
        self.classified = retryable;
        self.rule.retry_request(self.request, Err(error), retryable)
    }

    /// A transient error that the request's rule kept from a retry (a `POST`'s reset) is still
    /// the dependency's failure. Asked after `retry_if` for the same error.
    #[inline]
    fn error_failed(&mut self, error: &E) -> bool {
        !self.failed()
            && !self.left_behind(error)
            && (self.classified || self.hooks.error_failed(error))
    }

    #[inline]
    fn hedge_allowed(&mut self) -> bool {
        self.hooks.hedge_allowed() && self.rule.hedge_allowed(self.request)
    }

    #[inline]
    fn idempotent(&mut self) -> Option<bool> {
        self.hooks
            .idempotent()
            .or_else(|| self.rule.idempotent(self.request))
    }

    #[inline]
    fn retry_refused(&mut self) -> Option<crate::GiveUpReason> {
        self.hooks
            .retry_refused()
            .or_else(|| self.rule.retry_refused(self.request))
    }

    #[inline]
    fn counts_as_failure(&mut self, error: &E) -> bool {
        !self.left_behind(error) && self.hooks.counts_as_failure(error)
    }

    #[inline]
    fn retry_if_ok(&mut self, value: &T) -> bool {
        // As `retry_if`: HTTP's safety rule decides about repeating a response from the request.
        let retryable = if self.rule.judges_safety() {
            crate::classify::effect::classify_only(|| self.hooks.retry_if_ok(value))
        } else {
            self.hooks.retry_if_ok(value)
        };
        self.rule.retry_request(self.request, Ok(value), retryable)
    }

    #[inline]
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        if self.left_behind(error) {
            return None;
        }
        self.hooks.retry_after(error)
    }

    #[inline]
    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        if !self.left_behind(error) {
            self.hooks.on_retry(error, context, delay);
        }
    }

    #[inline]
    fn is_timeout(&mut self, error: &E) -> bool {
        self.failed() || (!self.left_behind(error) && self.hooks.is_timeout(error))
    }

    #[inline]
    fn class(&mut self, error: &E) -> ErrorClass {
        if self.failed() {
            ErrorClass::Timeout
        } else if self.left_behind(error) {
            ErrorClass::default()
        } else {
            self.hooks.class(error)
        }
    }

    #[inline]
    fn delay_for(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        if self.left_behind(error) {
            return None;
        }
        self.hooks.delay_for(error, attempt, computed)
    }
}

forward_hooks!(impl[T, E, H: Hooks<T, E>, Req, R: RetryRequest<Req, T, E>] Hooks<T, E> for ReadyAware<'_, H, Req, R>);
