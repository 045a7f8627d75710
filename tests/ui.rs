//! Compile-fail and compile-pass cases of `#[retryable]` and `#[recover]`.
//!
//! Each `tests/ui/fail/*.rs` must fail to compile with exactly the diagnostics in the `.stderr`
//! beside it (one error at the offending token, unless the case says otherwise); each
//! `tests/ui/pass/*.rs` must compile and run.
//!
//! After changing a diagnostic, regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test ui`, then review each `.stderr` diff before keeping it:
//! the point of these files is that a person has read every message.

#[test]
#[cfg_attr(
    any(
        not(feature = "http"),
        feature = "reqwest",
        feature = "serde",
        feature = "metrics",
        feature = "tonic",
        feature = "sqlx"
    ),
    ignore = "the expected messages list the impls of the default features; run with them alone"
)]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
