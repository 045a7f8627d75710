//! A tower [`Layer`](https://docs.rs/tower-layer/0.3/tower_layer/trait.Layer.html) that retries any [`Service`](https://docs.rs/tower-service/0.3/tower_service/trait.Service.html) under a [`RetryPolicy`] (feature `tower`): the
//! same engine, schedule, guards and names as `#[retryable]` and the closure API.
//!
//! ```
//! // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     use std::io;
//!     use std::sync::atomic::{AtomicU32, Ordering};
//!     use std::sync::Arc;
//!     use reattempt::RetryPolicy;
//!     use reattempt::tower::RetryLayer;
//!     use tower::Layer;
//!     use tower::Service;
//!
//!     /// A flaky dependency: fails twice, then answers with the attempt that reached it.
//!     #[derive(Clone)]
//!     struct Flaky(Arc<AtomicU32>);
//!     impl Service<String> for Flaky {
//!         type Response = String;
//!         type Error = io::Error;
//!         type Future = std::future::Ready<io::Result<String>>;
//!         fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
//!             std::task::Poll::Ready(Ok(()))
//!         }
//!         fn call(&mut self, req: String) -> Self::Future {
//!             let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
//!             let attempt = reattempt::context().map_or(0, |c| c.attempt());
//!             std::future::ready(if n < 3 {
//!                 Err(io::ErrorKind::ConnectionReset.into())
//!             } else {
//!                 Ok(format!("{req}: answered attempt {attempt}"))
//!             })
//!         }
//!     }
//!
//!     let policy = RetryPolicy::builder().max_attempts(4).build().unwrap();
//!     let mut svc = RetryLayer::new(policy)
//!         .retry_if(|e: &io::Error| e.kind() == io::ErrorKind::ConnectionReset)
//!         .layer(Flaky(Arc::default()));
//!     std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
//!     assert_eq!(svc.call("ping".into()).await.unwrap(), "ping: answered attempt 3");
//! }
//! ```
//!
//! How it runs a call:
//! - each attempt sends a fresh copy of the request ([`Replay`]): a request that cannot be
//!   copied does not compile (a streaming body), so a call is never silently sent once; with
//!   the feature `http`, [`ReplayBodyLayer`] makes a streaming body replayable up to a cap
//!   (see [`RetryLayer::http`]);
//! - the service that [`poll_ready`][Service::poll_ready] readied makes the first attempt, and
//!   every later attempt asks it `poll_ready` again before calling it (tower's contract, per
//!   attempt); the layer's own `poll_ready` is the inner service's. A `poll_ready` that
//!   returns an error means the service has failed (tower's contract): it is not asked again,
//!   and the call ends with that error, not retried, as with tower's own `Retry` (the breaker
//!   counts it as a failure);
//! - the inner service's `call` and its future run inside the call's [`context()`](crate::context()),
//!   so the service sees the attempt number and the call's idempotency key;
//! - the per-attempt `timeout` covers both `poll_ready` and the response; `max_elapsed`, the
//!   circuit breaker (one permit per attempt), the budget, the adaptive throttle (asked for
//!   each attempt) and the bulkhead (one slot per call, taken before its first attempt) work
//!   as for the attribute;
//! - with the policy's `hedge_after` (fixed or a quantile), a call hedges as the attribute and
//!   the closure API do (the same loop): if no attempt has answered within it, the next starts
//!   alongside, on its own clone of the inner service, which it asks `poll_ready` first;
//!   `max_attempts` counts every copy, the first accepted answer wins and the others are dropped
//!   (their breaker permits go back unused); copies share the call's context and key; each copy
//!   passes the breaker and the throttle, a hedge is paid from the budget, and the call holds one
//!   bulkhead slot for all of them.
//!
//! The layer holds its settings behind one `Arc`: a call clones that `Arc`, the hooks and the
//! inner service (as tower's own retry does), and allocates nothing else (a call that waits
//! for a bulkhead's slot boxes its wait; a hedged call boxes its copies, as the closure API's).
//!
//! [`RetryPolicy`]: crate::schedule::policy::RetryPolicy
//! [Service::poll_ready]: tower_service::Service::poll_ready

// The rooms, each using only those before it: `replay` (how a request is copied and judged),
// `guards` (the guard slots), `hooks` (the classification and its request-aware wrapper),
// `layer` (the layer, its builder and shared settings), `future` (a call's loop), `service`;
// then, with `http`, `http` (`.http()` and its rules) and `replay_body_layer`. This file
// defines nothing, so that no part uses another through it.
mod future;
mod guards;
mod hooks;
#[cfg(feature = "http")]
mod http;
mod layer;
mod replay;
#[cfg(feature = "http")]
mod replay_body_layer;
mod service;

pub use self::future::ResponseFuture;
pub use self::guards::{
    BreakerFor, BudgetSlot, BulkheadFor, BulkheadSlot, Converted, NoGuard, Shared, ThrottleFor,
};
pub use self::hooks::Classify;
#[cfg(feature = "http")]
pub use self::http::{
    DefaultRule, HttpHooks, HttpReplay, HttpRequests, HttpRetryLayer, HttpRetryService,
    RequestHook, RetryAfterHeader, TransientStatus,
};
pub use self::layer::RetryLayer;
pub use self::replay::{Cloned, Replay, RetryRequest, SaysIdempotent};
#[cfg(feature = "http")]
pub use self::replay_body_layer::{ReplayBodyLayer, ReplayBodyService};
pub use self::service::RetryService;
// The server side of `http::OUTER_ATTEMPTS_LEFT` (clients/outer.rs).
#[cfg(feature = "http")]
pub use crate::clients::outer::{OuterRetryLayer, OuterRetryService};
