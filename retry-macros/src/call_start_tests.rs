//! How the generated loop begins its call: with the attribute's own policy and no `max_elapsed`,
//! the call is made by `Call::without_deadline`, which reads nothing of the policy (the policy's
//! `static` holds the `p95` estimator's atomics, so the compiler cannot fold a test of it); with
//! `max_elapsed`, or a run-time `policy`, by `Call::new`, which starts the clock when needed.

fn expansion(args: &str, item: &str) -> String {
    let args = args.parse().unwrap_or_else(|e| panic!("{e}"));
    let item = item.parse().unwrap_or_else(|e| panic!("{e}"));
    crate::expand::retryable(args, item).to_string()
}

const ASYNC: &str = "async fn f(x: u32) -> Result<u32, E> { call(x).await }";
const BLOCKING: &str = "fn f(x: u32) -> Result<u32, E> { call(x) }";

#[test]
fn the_attributes_own_policy_without_max_elapsed_is_not_read_to_begin() {
    for (args, item) in [
        ("", ASYNC),
        ("max_attempts = 5, timeout = \"1s\"", ASYNC),
        ("circuit_breaker = BREAKER", ASYNC),
        ("max_attempts = 2", BLOCKING),
    ] {
        let out = expansion(args, item);
        assert!(
            out.contains("Call :: without_deadline (& __REATTEMPT_POLICY)"),
            "{args}: {out}"
        );
        assert!(!out.contains("Call :: new ("), "{args}: {out}");
    }
}

#[test]
fn a_call_with_max_elapsed_or_a_run_time_policy_is_made_by_new() {
    for (args, item) in [
        ("max_elapsed = \"10s\"", ASYNC),
        ("max_elapsed = \"10s\", timeout = \"1s\"", ASYNC),
        ("max_elapsed = \"10s\"", BLOCKING),
        ("policy = POLICY", BLOCKING),
    ] {
        let out = expansion(args, item);
        assert!(out.contains("Call :: new ("), "{args}: {out}");
        assert!(!out.contains("without_deadline"), "{args}: {out}");
    }
}
