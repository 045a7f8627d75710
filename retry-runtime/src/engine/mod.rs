//! The engine: every rule of a retrying call, applied the same way for every driver.
//!
//! - [`state`]: one call's state (its attempt, clock, key, schedule) and the pure rules over it
//!   (when an attempt may start and for how long; what follows a failure), clock passed in.
//! - [`steps`]: those rules applied for a driver, with the user's [`hooks`], the shared guards,
//!   the inherited deadline of the enclosing call ([`context`]) and the [`events`] each step emits.
//! - [`context`]: what an attempt can learn about its call (`context()`); [`key`]: the call's
//!   idempotency key.
//! - [`spans`]: the call and its attempts as `tracing` spans (feature `spans`).
//! - [`meters`]: the metrics the [`events`] record (feature `metrics`), as OpenTelemetry names them.
//! - [`hooks_forward`]: one delegation for the clients' hooks that wrap other hooks, so that none
//!   drops a hook.

pub(crate) mod context;
pub(crate) mod deadline;
pub(crate) mod events;
pub(crate) mod give_up;
pub(crate) mod hooks;
// Used by the client wrappers that hold hooks (the tower layer's, so `tonic`'s too, and
// `reqwest-middleware`'s); compiled in every build so that its check that every hook is
// forwarded runs in every test pass.
#[cfg_attr(
    not(any(feature = "tower", feature = "reqwest-middleware")),
    allow(dead_code, unused_imports, unused_macros)
)]
pub(crate) mod hooks_forward;
pub(crate) mod instant_slot;
pub(crate) mod key;
pub(crate) mod spans;
// The table of metrics is compiled in every build: its test of the names runs in every pass.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) mod meters;
pub(crate) mod state;
pub(crate) mod steps;
