//! Compile-fail cases of the tower layer (feature `tower`): see `tests/ui.rs` for how the
//! expected messages are kept (`TRYBUILD=overwrite cargo test --test ui_tower --features tower`,
//! then review each `.stderr`).

#[test]
#[cfg_attr(
    any(
        feature = "reqwest",
        feature = "serde",
        feature = "metrics",
        feature = "tonic",
        feature = "sqlx"
    ),
    ignore = "the expected messages list the impls of `tower` and the default features; run with them alone"
)]
fn ui_tower() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/tower/*.rs");
}
