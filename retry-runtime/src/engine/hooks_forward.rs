//! One delegation for hooks that wrap other hooks: the gRPC layer's `BoxedHooks`, the
//! middleware's `RequestAware` and the tower layer's `ReadyAware` each change a few answers of
//! the hooks they hold and pass on the rest.
//!
//! Passing on by hand drops a hook silently: a method added to [`Hooks`] later and forgotten in
//! one wrapper answers with the trait's default there, not with the held hooks' answer. So a
//! wrapper implements [`ForwardHooks`] (what it holds, and the methods it changes), whose every
//! method passes on by default, and [`forward_hooks!`] writes its [`Hooks`] impl, which calls
//! `ForwardHooks` for every method. A method added to `Hooks` is then added here, once, for all
//! wrappers: this module's test reads the `Hooks` trait's source and fails while a method of it
//! is missing from `ForwardHooks` or from the macro (and clippy's `missing_trait_methods`, denied
//! on the impl the macro writes, fails too).

use std::time::Duration;

use crate::ErrorClass;
use crate::engine::context::RetryContext;
use crate::engine::give_up::GiveUpReason;
use crate::engine::hooks::Hooks;

/// Hooks that hold other hooks ([`Inner`](Self::Inner)) and change some of their answers: every
/// method of [`Hooks`], each by default the held hooks' answer. Implement [`inner`](Self::inner),
/// [`inner_ref`](Self::inner_ref) and the methods the wrapper changes, then write the `Hooks`
/// impl with [`forward_hooks!`].
pub(crate) trait ForwardHooks<T, E> {
    /// The hooks held.
    type Inner: Hooks<T, E> + ?Sized;

    /// The hooks held, to ask.
    fn inner(&mut self) -> &mut Self::Inner;

    /// The hooks held, for [`Hooks::retries_ok`] (which takes `&self`).
    fn inner_ref(&self) -> &Self::Inner;

    // Every method of `Hooks`, in its order, each passing on the held hooks' answer.

    fn retry_if(&mut self, error: &E) -> bool {
        Hooks::retry_if(self.inner(), error)
    }

    fn retry_if_ok(&mut self, value: &T) -> bool {
        Hooks::retry_if_ok(self.inner(), value)
    }

    fn retries_ok(&self) -> bool {
        Hooks::retries_ok(self.inner_ref())
    }

    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        Hooks::retry_after(self.inner(), error)
    }

    fn retry_after_ok(&mut self, value: &T) -> Option<Duration> {
        Hooks::retry_after_ok(self.inner(), value)
    }

    fn delay_for(&mut self, error: &E, attempt: u32, computed: Duration) -> Option<Duration> {
        Hooks::delay_for(self.inner(), error, attempt, computed)
    }

    fn on_retry(&mut self, error: &E, context: &RetryContext, delay: Duration) {
        Hooks::on_retry(self.inner(), error, context, delay);
    }

    fn is_timeout(&mut self, error: &E) -> bool {
        Hooks::is_timeout(self.inner(), error)
    }

    fn class(&mut self, error: &E) -> ErrorClass {
        Hooks::class(self.inner(), error)
    }

    fn class_ok(&mut self, value: &T) -> ErrorClass {
        Hooks::class_ok(self.inner(), value)
    }

    fn ok_failed(&mut self, value: &T) -> bool {
        Hooks::ok_failed(self.inner(), value)
    }

    fn error_failed(&mut self, error: &E) -> bool {
        Hooks::error_failed(self.inner(), error)
    }

    fn idempotent(&mut self) -> Option<bool> {
        Hooks::idempotent(self.inner())
    }

    fn hedge_allowed(&mut self) -> bool {
        Hooks::hedge_allowed(self.inner())
    }

    fn delay_for_ok(&mut self, value: &T, attempt: u32, computed: Duration) -> Option<Duration> {
        Hooks::delay_for_ok(self.inner(), value, attempt, computed)
    }

    fn retry_refused(&mut self) -> Option<GiveUpReason> {
        Hooks::retry_refused(self.inner())
    }

    fn counts_as_failure(&mut self, error: &E) -> bool {
        Hooks::counts_as_failure(self.inner(), error)
    }
}

/// Writes `impl Hooks<T, E> for Wrapper` from the wrapper's [`ForwardHooks`] impl, every method
/// of [`Hooks`] answered by `ForwardHooks`'s method of the same name. The generics go in
/// brackets: `forward_hooks!(impl[H: Hooks<T, E>] Hooks<T, E> for Wrapper<H>);`.
macro_rules! forward_hooks {
    (impl[$($generics:tt)*] Hooks<$t:ty, $e:ty> for $wrapper:ty) => {
        // A `Hooks` method without a line here would answer with the trait's default.
        #[deny(clippy::missing_trait_methods)]
        impl<$($generics)*> $crate::engine::hooks::Hooks<$t, $e> for $wrapper {
            #[inline]
            fn retry_if(&mut self, error: &$e) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::retry_if(self, error)
            }
            #[inline]
            fn retry_if_ok(&mut self, value: &$t) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::retry_if_ok(self, value)
            }
            #[inline]
            fn retries_ok(&self) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::retries_ok(self)
            }
            #[inline]
            fn retry_after(
                &mut self,
                error: &$e,
            ) -> ::core::option::Option<::core::time::Duration> {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::retry_after(self, error)
            }
            #[inline]
            fn retry_after_ok(
                &mut self,
                value: &$t,
            ) -> ::core::option::Option<::core::time::Duration> {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::retry_after_ok(self, value)
            }
            #[inline]
            fn delay_for(
                &mut self,
                error: &$e,
                attempt: u32,
                computed: ::core::time::Duration,
            ) -> ::core::option::Option<::core::time::Duration> {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::delay_for(
                    self, error, attempt, computed,
                )
            }
            #[inline]
            fn on_retry(
                &mut self,
                error: &$e,
                context: &$crate::RetryContext,
                delay: ::core::time::Duration,
            ) {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::on_retry(
                    self, error, context, delay,
                );
            }
            #[inline]
            fn is_timeout(&mut self, error: &$e) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::is_timeout(self, error)
            }
            #[inline]
            fn class(&mut self, error: &$e) -> $crate::ErrorClass {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::class(self, error)
            }
            #[inline]
            fn class_ok(&mut self, value: &$t) -> $crate::ErrorClass {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::class_ok(self, value)
            }
            #[inline]
            fn ok_failed(&mut self, value: &$t) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::ok_failed(self, value)
            }
            #[inline]
            fn error_failed(&mut self, error: &$e) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::error_failed(self, error)
            }
            #[inline]
            fn idempotent(&mut self) -> ::core::option::Option<bool> {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::idempotent(self)
            }
            #[inline]
            fn hedge_allowed(&mut self) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::hedge_allowed(self)
            }
            #[inline]
            fn delay_for_ok(
                &mut self,
                value: &$t,
                attempt: u32,
                computed: ::core::time::Duration,
            ) -> ::core::option::Option<::core::time::Duration> {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::delay_for_ok(
                    self, value, attempt, computed,
                )
            }
            #[inline]
            fn retry_refused(&mut self) -> ::core::option::Option<$crate::GiveUpReason> {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::retry_refused(self)
            }
            #[inline]
            fn counts_as_failure(&mut self, error: &$e) -> bool {
                $crate::engine::hooks_forward::ForwardHooks::<$t, $e>::counts_as_failure(
                    self, error,
                )
            }
        }
    };
}
pub(crate) use forward_hooks;

#[cfg(test)]
mod tests;
