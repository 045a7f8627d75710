//! The runtime of [reattempt](https://docs.rs/reattempt): retry policies, backoff, jitter, the
//! attempt engine, the call context and the closure API. Every retry decision is made here, in
//! plain code that is tested without macros; `#[retryable]` only writes the loop that calls it.
//!
//! ```
//! // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     use std::time::Duration;
//!     use reattempt::{Jitter, RetryPolicy};
//!
//!     let policy = RetryPolicy::builder()
//!         .max_attempts(4)
//!         .delay(Duration::from_millis(200))
//!         .max_delay(Duration::from_secs(2))
//!         .jitter(Jitter::Full)
//!         .timeout(Duration::from_secs(1))
//!         .build()?;
//!     let value = policy.retry(|| async { Ok::<_, std::io::Error>(42) }).await?;
//!     assert_eq!(value, 42);
//!     Ok(())
//! }
//! ```

// docs.rs (`--cfg docsrs`): feature badges, but none for the loom model build (a test build).
#![cfg_attr(docsrs, feature(doc_cfg), doc(auto_cfg(hide(loom))))]
#![deny(unsafe_code)] // Three exceptions: `context()`'s thread-local pointer (engine/context.rs), a lent call's `Ok` given the lent lifetime (drivers/lent.rs, higher-ranked: see there), and the tower layer's view of a boxed error without `'static` (clients/tower/http.rs).

// The layers, lowest first: a module uses only the ones before it, never one that uses it back
// (tests/module_layers/ checks it, in every crate, and that schedule < engine < drivers).
// - schedule: rng, jitter, hedge < policy (the settings) < delays (the sleeps a policy gives) <
//   preset.
// - engine: give_up (why a call ended), deadline (instant arithmetic), key, instant_slot < events
//   < state (one call's rules, over the schedule and the budget) < context < hooks <
//   hooks_forward (wrappers of hooks) < steps (the rules applied for a driver, with the guards).
// - guards: between the engine's lower modules, which they report through (give_up, events, state),
//   and its steps, which ask them.
// - drivers: timed, timeout (a timeout into the call's error), kept < hedged < closure (the
//   closure API), stream (resumed streams) < call (the driver of generated code, which also recovers after a closure-API
//   call) < lent.
// - error, convert and classify (`ErrorClass`, `Transient`) below all of these; classify's http,
//   sqlx and tonic, clients, config and testing above or beside them (no cycle is left: the
//   test fails on any).
mod classify;
mod clients;
#[cfg(feature = "serde")]
mod config;
mod convert;
mod drivers;
mod engine;
mod error;
mod guards;
mod schedule;
#[cfg(not(loom))]
mod sync;
#[cfg(loom)]
#[doc(hidden)]
pub mod sync;

#[cfg(feature = "http")]
pub use classify::http;
#[cfg(feature = "tonic")]
pub use classify::tonic;
#[cfg(feature = "reqwest-middleware")]
pub use clients::reqwest_middleware;
#[cfg(feature = "sqlx")]
pub use clients::sqlx;
#[cfg(feature = "tower")]
pub use clients::tower;

#[cfg(feature = "testing")]
pub mod testing;

pub use classify::{Effect, ErrorClass, Transient, error_class, is_timeout, may_repeat, transient};
pub use engine::context::{RetryContext, context};
pub use engine::give_up::GiveUpReason;
pub use engine::hooks::{
    ChooseDelay, ClassHook, ClassOf, DelayFor, DelayHook, DelaySlot, ErrorHook, FnHooks, Hooks,
    OkClassOf, OkHook, OnRetryHook, TimeoutIf, Unset,
};
pub use engine::key::IdempotencyKey;
pub use error::{BreakerOpen, BulkheadFull, ConfigError, Elapsed, Throttled};
pub use guards::breaker::{BreakerState, CircuitBreaker, CircuitBreakerBuilder, Permit};
pub use guards::budget::{RetryBudget, RetryBudgetBuilder};
pub use guards::bulkhead::{Bulkhead, BulkheadBuilder, BulkheadPermit};
pub use guards::ratio_budget::RatioBudgetBuilder;
pub use guards::retry_throttle::RetryThrottle;
pub use guards::throttle::{AdaptiveThrottle, AdaptiveThrottleBuilder};
pub use schedule::delays::Delays;
pub use schedule::hedge::Latencies;
pub use schedule::jitter::SampleJitter;
pub use schedule::policy::{RetryPolicy, RetryPolicyBuilder};
pub use schedule::preset::{ParsePresetError, Preset};
pub use schedule::rng::seed_rng;

// The rules the macros check at compile time, shared with them through retry-rules (which
// compiles no tokio and no rand for the proc macro), each at its path here as before.
pub use retry_rules::{
    Backoff, DeadSetting, HedgeAfter, HintMode, Jitter, LogError, ParseBackoffError,
    ParseDurationError, ParseHedgeAfterError, ParseHintModeError, ParseJitterError, ParseLogError,
    PolicyError, PolicySettings, parse_duration,
};

pub use drivers::closure::{
    AddGuard, Breaker, BreakerSlot, Conversion, Given, NoBreaker, Retry, RetryFuture, ViaTrait,
};
pub use drivers::kept::{Keep, KeepsOutcome, NotKept};
pub use drivers::stream::{NoRecover, NoStream, Opened, RecoverStream, RetryStream, StreamSetup};
pub use drivers::timeout::{ElapsedInto, NoTimeout, TimeoutInto};

pub use convert::{FromBreakerOpen, FromBulkheadFull, FromElapsed, FromThrottled};

/// Describes the crate's metrics (feature `metrics`) to the recorder current now: each one's
/// description, and its unit as the `metrics` facade has units (seconds, or a count; the UCUM
/// units of the observability chapter's table are what an OpenTelemetry exporter should show).
/// The crate does it by itself once per process, to the recorder current at its first record:
/// call this after installing a recorder if a retrying call may have run before.
///
/// ```
/// use metrics_util::debugging::DebuggingRecorder;
///
/// let recorder = DebuggingRecorder::new();
/// let snapshotter = recorder.snapshotter();
/// metrics::with_local_recorder(&recorder, || {
///     reattempt::describe_metrics();
///     metrics::counter!("reattempt.calls", "reattempt.name" => "demo").increment(1);
/// });
/// let snapshot = snapshotter.snapshot().into_vec();
/// let (_, unit, description, _) = &snapshot[0];
/// assert_eq!(*unit, Some(metrics::Unit::Count));
/// assert!(description.as_ref().is_some_and(|d| d.contains("calls, by outcome")));
/// ```
#[cfg(feature = "metrics")]
pub fn describe_metrics() {
    engine::meters::describe_all();
}

/// The public API of `reattempt`, the facade crate, which re-exports this module whole (a glob
/// `pub use`): what users name, and nothing else. The facade's surface follows this crate's
/// features (a feature of the facade turns on the runtime's feature of the same name), so this
/// crate's doc examples, written with `reattempt::…` paths as users read them, compile against
/// the facade (a dev-dependency) whatever features it was built with.
///
/// `docs/public-api.txt` pins the list (`.ci/public-api.sh` fails on any change to it): an item
/// added here is added to `reattempt`'s semver surface, and must be so on purpose.
#[doc(hidden)]
pub mod api {
    pub use crate::{
        AdaptiveThrottle, AdaptiveThrottleBuilder, Backoff, BreakerOpen, BreakerState, Bulkhead,
        BulkheadBuilder, BulkheadFull, CircuitBreaker, CircuitBreakerBuilder, ConfigError, Delays,
        Effect, Elapsed, ErrorClass, FnHooks, FromBreakerOpen, FromBulkheadFull, FromElapsed,
        FromThrottled, GiveUpReason, HedgeAfter, HintMode, Hooks, IdempotencyKey, Jitter, LogError,
        ParseBackoffError, ParseDurationError, ParseHedgeAfterError, ParseHintModeError,
        ParseJitterError, ParseLogError, ParsePresetError, PolicyError, Preset, RatioBudgetBuilder,
        Retry, RetryBudget, RetryBudgetBuilder, RetryContext, RetryPolicy, RetryPolicyBuilder,
        RetryStream, RetryThrottle, SampleJitter, StreamSetup, Throttled, Transient, context,
        error_class, is_timeout, may_repeat, parse_duration, seed_rng, transient,
    };

    #[cfg(feature = "metrics")]
    pub use crate::describe_metrics;
    #[cfg(feature = "http")]
    pub use crate::http;
    #[cfg(feature = "reqwest-middleware")]
    pub use crate::reqwest_middleware;
    #[cfg(feature = "sqlx")]
    pub use crate::sqlx;
    #[cfg(feature = "testing")]
    pub use crate::testing;
    #[cfg(feature = "tonic")]
    pub use crate::tonic;
    #[cfg(feature = "tower")]
    pub use crate::tower;

    pub mod runtime {
        //! The building blocks behind the crate's types, public because they appear in the
        //! signatures of public items, so that code can name them; most code never does.
        //!
        //! - **The closure API's type-state.** [`RetryPolicy::retry`](crate::RetryPolicy::retry)
        //!   returns a [`Retry`](crate::Retry) whose type parameters record what its builder methods
        //!   set: the hooks ([`FnHooks`](crate::FnHooks), whose slots are [`Unset`] until given, then
        //!   a closure, [`TimeoutIf`], [`ClassOf`], [`OkClassOf`] or [`DelayFor`]), the shared guards
        //!   ([`NoBreaker`] or [`Breaker`], whose rejections convert [`ViaTrait`] or as [`Given`]),
        //!   and the timeout's conversion ([`ElapsedInto`], [`NoTimeout`] or a closure);
        //!   awaited, it is a [`RetryFuture`]. Named by code that stores a configured call in a field
        //!   or returns one from a function (`Retry<'_, F, FnHooks<…>, NoBreaker, NoTimeout>`), as the
        //!   tower layer's `HttpRetryService<S, NoTimeout>`.
        //! - **A resumed stream's parts.** [`RetryStream`](crate::RetryStream)'s fallback slot is
        //!   [`NoRecover`] (whose stream, never made, is [`NoStream`]) or a closure, bound by
        //!   [`RecoverStream`]; [`RetryStream::opened`](crate::RetryStream::opened) gives an
        //!   [`Opened`].
        //! - **The traits that bound them** ([`ErrorHook`], [`OkHook`], [`OnRetryHook`],
        //!   [`ClassHook`], [`DelayHook`], [`DelaySlot`], [`ChooseDelay`], [`AddGuard`],
        //!   [`BreakerSlot`], [`Conversion`], [`TimeoutInto`], [`KeepsOutcome`], [`Keep`] with
        //!   [`NotKept`]): implemented here for the types above, named in generic code's bounds; not
        //!   meant to be implemented elsewhere (implement [`Hooks`](crate::Hooks) instead).
        //! - **Guards' permits**: [`Permit`]
        //!   ([`CircuitBreaker::try_acquire`](crate::CircuitBreaker::try_acquire)) and
        //!   [`BulkheadPermit`] ([`Bulkhead`](crate::Bulkhead)'s), for code that drives a guard by
        //!   hand.
        //! - **Settings and estimates**: [`PolicySettings`] (every key of a schedule, each optional:
        //!   [`RetryPolicyBuilder::from_settings`](crate::RetryPolicyBuilder::from_settings) and
        //!   [`RetryPolicyBuilder::settings`](crate::RetryPolicyBuilder::settings)), what
        //!   its check gives ([`CheckedSettings`], [`DeadSetting`]), and [`Latencies`], the estimate
        //!   behind a quantile [`HedgeAfter`](crate::HedgeAfter) (read through [`Quantiles`]);
        //!   a retried stream's own settings beside its schedule's ([`StreamSettings`], the rules
        //!   they break: [`StreamError`]).

        pub use crate::{
            AddGuard, Breaker, BreakerSlot, BulkheadPermit, ChooseDelay, ClassHook, ClassOf,
            Conversion, DelayFor, DelayHook, DelaySlot, ElapsedInto, ErrorHook, Given, Keep,
            KeepsOutcome, Latencies, NoBreaker, NoRecover, NoStream, NoTimeout, NotKept, OkClassOf,
            OkHook, OnRetryHook, Opened, Permit, PolicySettings, RecoverStream, RetryFuture,
            TimeoutIf, TimeoutInto, Unset, ViaTrait,
        };
        pub use retry_rules::{
            CheckedSettings, DeadSetting, Quantiles, StreamError, StreamSettings,
        };
    }
}

/// What the code `#[retryable]` generates names, and drivers built on the engine: not part of
/// the documented API, and not bound by semver.
#[doc(hidden)]
pub mod __private {
    // The trait of a stream's items, for the facade's check of a stream's fallback.
    pub use crate::drivers::call::{
        Attempt, Call, LoggedError, Recover, TimedAttempt, hedge_ignored,
    };
    pub use crate::drivers::lent::{Captures, Lends, Lent, LentAttempt, WithLt};
    pub use crate::engine::events::CallName;
    pub use crate::engine::hooks::judged_class;
    pub use crate::engine::state::{Decision, Detached, Engine, Start};
    pub use crate::engine::steps::{
        CopyDecision, admit, begin, decide, decide_copy, decide_keeping, decide_rejected,
        poll_slot, start_alongside,
    };
    pub use crate::guards::bulkhead::CallSlot;
    pub use crate::guards::{Admission, Admitted, Guards, ThrottleAdmission};
    pub use futures_core::Stream;
}
