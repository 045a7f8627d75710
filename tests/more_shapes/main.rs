//! More shapes users write, found by a hostile review of the shape matrix (`tests/shapes/`): each
//! module compiles under `#![deny(warnings, clippy::pedantic)]` and checks its behaviour. One test
//! binary, so that CI links them once.
#![deny(warnings, unused_mut, unsafe_code, clippy::pedantic)]

mod borrowed_return;
mod coercions;
mod copy_receiver;
mod format_macro;
mod generic_fallback;
mod macro_fragments;
mod patterns;
mod policy_arg;
mod receivers_format;
mod recover_guards;
mod ref_pattern;
mod timed_out_hijack;
