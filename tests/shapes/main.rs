//! The shape matrix: every function shape users write, under `#[retryable]`. Each shape is
//! compiled (a compile-pass case), linted with the workspace's `clippy::pedantic` by CI's
//! `cargo clippy --all-targets -D warnings`, and run: it fails its first attempt, and the test
//! checks that the retry started from fresh arguments and that the future stays `Send` where the
//! plain function's would be. Shapes are numbered in comments (`S1`…); the README's list of
//! supported shapes is this list. Crate-level `forbid` lints are in `tests/ui/pass/strict_lints.rs`.
#![deny(warnings)]

mod args;
mod generics;
mod patterns;
mod receivers;
mod recover;
mod returns;
mod send;
mod stacks;
mod timeouts;

/// The error of every shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail;

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fail")
    }
}

/// Whether this is the first attempt of the call being made (which then fails).
pub fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

/// The attempt of the call being made.
pub fn attempt() -> u32 {
    reattempt::context().map_or(0, |c| c.attempt())
}

/// Compile-time check that a future (or value) is `Send`.
pub fn assert_send<T: Send>(t: T) -> T {
    t
}
