//! A retrying call being set up ([`Retry`]), as [`RetryPolicy::retry`] makes it, and how its
//! settings change one slot of its type.

use std::fmt::Debug;
use std::future::Future;

use super::guard_slot::NoBreaker;
use crate::drivers::timeout::ElapsedInto;
// For the docs' links only.
use crate::engine::hooks::FnHooks;
use crate::guards::budget::RetryBudget;
use crate::guards::bulkhead::Bulkhead;
use crate::schedule::policy::RetryPolicy;

impl RetryPolicy {
    /// Retries `op` (a closure making one attempt's future) under this policy.
    ///
    /// The per-attempt `timeout` turns a slow attempt into `E::from_elapsed(Elapsed)`, so by
    /// default the error type must have that conversion ([`FromElapsed`](crate::FromElapsed): every
    /// `From<Elapsed>` type such as `std::io::Error`, `String`, and with their features
    /// `tonic::Status`, `sqlx::Error`, `reqwest::Error`). The policy is a value known only at
    /// run time, so the compiler cannot tell whether it holds a `timeout`; rather than ignore one
    /// silently or fail at run time, an error type that has no conversion (another crate's, such
    /// as `http::StatusCode`, which the orphan rule keeps from `From<Elapsed>`) says which it
    /// wants, once, where the call is written:
    /// [`.timeout_into(|elapsed| …)`](Retry::timeout_into) makes its error from the timeout, and
    /// [`.without_timeout()`](Retry::without_timeout) runs the attempts without a per-attempt limit.
    ///
    /// `max_elapsed` bounds the whole call: no sleep starts that would end at or past it, and a
    /// timed attempt is clipped to what remains (see [`RetryPolicyBuilder::max_elapsed`](crate::RetryPolicyBuilder::max_elapsed)).
    ///
    /// The future is fused the way futures combinators are: polling it after it returned panics
    /// ("polled after completion") rather than running the operation again.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use reattempt::{RetryPolicy, transient};
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(4).build().unwrap();
    ///     let mut calls = 0;
    ///     let out: io::Result<&str> = policy
    ///         .retry(|| {
    ///             calls += 1;
    ///             let n = calls;
    ///             async move { if n < 3 { Err(io::ErrorKind::ConnectionReset.into()) } else { Ok("ok") } }
    ///         })
    ///         .retry_if(transient)
    ///         // A reset may come after the request was acted on: repeated only on a call that
    ///         // is safe to repeat (a read), which says so.
    ///         .idempotent(true)
    ///         .on_retry(|e, ctx, d| {
    ///             println!("attempt {} failed ({e}); retrying in {d:?}", ctx.attempt());
    ///         })
    ///         .await;
    ///     assert_eq!(out.unwrap(), "ok");
    ///     assert_eq!(calls, 3);
    /// }
    /// ```
    pub fn retry<Op, Fut, T, E>(&self, op: Op) -> Retry<'_, Op, FnHooks<T, E>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        Retry {
            policy: self,
            op,
            hooks: FnHooks::new(),
            breaker: NoBreaker,
            budget: None,
            bulkhead: None,
            name: "retry",
            timeout: ElapsedInto,
        }
    }
}

/// A retrying call being set up; `.await` it to run. Made by [`RetryPolicy::retry`].
///
/// Its settings carry the attribute's names: [`retry_if`](Retry::retry_if),
/// [`retry_if_ok`](Retry::retry_if_ok), [`retry_after`](Retry::retry_after),
/// [`on_retry`](Retry::on_retry), [`circuit_breaker`](Retry::circuit_breaker),
/// [`budget`](Retry::budget), [`name`](Retry::name); or one [`Hooks`] value for all the hooks
/// ([`hooks`](Retry::hooks)).
///
/// [`Hooks`]: crate::engine::hooks::Hooks
#[must_use = "a retry does nothing until awaited"]
#[derive(Debug, Clone)]
pub struct Retry<'p, Op, K, B = NoBreaker, C = ElapsedInto> {
    pub(super) policy: &'p RetryPolicy,
    pub(super) op: Op,
    pub(super) hooks: K,
    pub(super) breaker: B,
    pub(super) budget: Option<&'p RetryBudget>,
    pub(super) bulkhead: Option<&'p Bulkhead>,
    pub(super) name: &'static str,
    pub(super) timeout: C,
}

// Each setting rebuilds the call with one slot of its type changed.
impl<'p, Op, K, B, C> Retry<'p, Op, K, B, C> {
    pub(super) fn map_hooks<H>(self, f: impl FnOnce(K) -> H) -> Retry<'p, Op, H, B, C> {
        Retry {
            policy: self.policy,
            op: self.op,
            hooks: f(self.hooks),
            breaker: self.breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            name: self.name,
            timeout: self.timeout,
        }
    }

    pub(super) fn map_timeout<D>(self, timeout: D) -> Retry<'p, Op, K, B, D> {
        Retry {
            policy: self.policy,
            op: self.op,
            hooks: self.hooks,
            breaker: self.breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            name: self.name,
            timeout,
        }
    }

    pub(super) fn map_guards<G>(self, breaker: G) -> Retry<'p, Op, K, G, C> {
        Retry {
            policy: self.policy,
            op: self.op,
            hooks: self.hooks,
            breaker,
            budget: self.budget,
            bulkhead: self.bulkhead,
            name: self.name,
            timeout: self.timeout,
        }
    }
}
