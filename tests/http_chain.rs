//! Layered amplification over real HTTP (issue 17): three axum services on loopback, each a
//! `#[retryable(max_attempts = 3)]` client of the next, in front of a leaf service
//! (`reattempt_support::sim::chain`). Counts, not timings: a dead leaf sees 27 requests per
//! top-level call when every layer retries; with `one_layer` on the inner two, their requests
//! carrying `OUTER_ATTEMPTS_LEFT` (`reattempt::http::outer_header`) and each service behind
//! `reattempt::tower::OuterRetryLayer`, the rule's 7, as in one process. Without the server layer
//! the header is not read and `one_layer` sees no caller: 27 again.

use reattempt_support::sim::chain::{Layering, Leaf, measure};

const FLAKY: Leaf = Leaf::Flaky {
    fail_percent: 10,
    seed: 17,
};

#[tokio::test]
async fn a_dead_leaf_sees_27_requests_per_call_when_every_layer_retries() {
    let every = measure(Leaf::Dead, Layering::Every, 4).await.unwrap();
    assert_eq!((every.ok, every.leaf_hits), (0, 4 * 27), "{every:?}");
}

#[tokio::test]
async fn one_layer_over_http_gives_the_rules_7_with_the_header_and_the_server_layer() {
    let one_layer = measure(Leaf::Dead, Layering::OneLayer, 4).await.unwrap();
    assert_eq!(
        (one_layer.ok, one_layer.leaf_hits),
        (0, 4 * 7),
        "(max_attempts − 1) × (layers − 1) + max_attempts: {one_layer:?}"
    );
}

#[tokio::test]
async fn without_the_server_layer_one_layer_does_not_cross_http() {
    let unread = measure(Leaf::Dead, Layering::OneLayerNoServerLayer, 4)
        .await
        .unwrap();
    assert_eq!(
        (unread.ok, unread.leaf_hits),
        (0, 4 * 27),
        "each handler runs in its own task: no caller in its context: {unread:?}"
    );
}

#[tokio::test]
async fn with_a_flaky_leaf_one_layer_keeps_success_within_half_a_point() {
    let calls = 2000;
    let every = measure(FLAKY, Layering::Every, calls).await.unwrap();
    let one_layer = measure(FLAKY, Layering::OneLayer, calls).await.unwrap();
    assert!(
        one_layer.leaf_hits <= every.leaf_hits,
        "{one_layer:?} vs {every:?}"
    );
    let gap = (every.success() - one_layer.success()) * 100.0;
    assert!(
        gap <= 0.5,
        "success {:.4} % vs {:.4} % unlimited: {gap:.4} pp",
        one_layer.success() * 100.0,
        every.success() * 100.0
    );
    // A top-level call fails only if the leaf fails on both single-attempt rounds and on the
    // last round's retries: about 1 in 10^5.
    assert!(one_layer.ok + 1 >= calls, "{one_layer:?}");
}
