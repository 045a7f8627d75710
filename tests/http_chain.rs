//! Layered amplification over real HTTP (issue 17): three axum services on loopback, each a
//! `#[retryable(max_attempts = 3)]` client of the next, in front of a leaf service
//! (`reattempt_support::sim::chain`). Counts, not timings: a dead leaf sees exactly 27 requests
//! per top-level call when every layer retries, and still 27 with `one_layer` on the inner two
//! (the rule reads the retry context, which follows the poll and does not cross a request); a
//! header carrying "an outer call has attempts left" brings it to the rule's 7.

use reattempt_support::sim::chain::{Layering, Leaf, measure};

const FLAKY: Leaf = Leaf::Flaky {
    fail_percent: 10,
    seed: 17,
};

#[tokio::test]
async fn a_dead_leaf_sees_27_requests_per_call_and_one_layer_does_not_cross_http() {
    let every = measure(Leaf::Dead, Layering::Every, 4).await.unwrap();
    assert_eq!((every.ok, every.leaf_hits), (0, 4 * 27), "{every:?}");
    let one_layer = measure(Leaf::Dead, Layering::OneLayer, 4).await.unwrap();
    assert_eq!(
        (one_layer.ok, one_layer.leaf_hits),
        (0, 4 * 27),
        "each service's handler runs in its own task: no outer call in its context: {one_layer:?}"
    );
}

#[tokio::test]
async fn a_header_carrying_the_outer_calls_state_gives_the_rules_7() {
    let hint = measure(Leaf::Dead, Layering::Hint, 4).await.unwrap();
    assert_eq!((hint.ok, hint.leaf_hits), (0, 4 * 7), "{hint:?}");
}

#[tokio::test]
async fn with_a_flaky_leaf_one_layer_changes_nothing_over_http_and_the_hint_keeps_success() {
    let calls = 300;
    let every = measure(FLAKY, Layering::Every, calls).await.unwrap();
    let one_layer = measure(FLAKY, Layering::OneLayer, calls).await.unwrap();
    assert_eq!(
        every, one_layer,
        "the same seeded answers, the same requests: identical counts"
    );
    let hint = measure(FLAKY, Layering::Hint, calls).await.unwrap();
    assert!(hint.leaf_hits <= every.leaf_hits, "{hint:?} vs {every:?}");
    // A top-level call fails only if the leaf fails on both single-attempt rounds and on the
    // last round's retries: about 1 in 10^5.
    assert!(hint.ok + 1 >= calls, "{hint:?}");
    assert!(every.ok + 1 >= calls, "{every:?}");
}
