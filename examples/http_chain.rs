//! Layered amplification over real HTTP: three axum services on loopback, each a
//! `#[retryable(max_attempts = 3)]` client of the next, in front of a leaf that is dead, then
//! fails 10 % of requests. Leaf requests per top-level call and top-level success, for every layer
//! retrying, and `one_layer = true` on the inner two with the caller's attempts left carried in
//! `reattempt::http::OUTER_ATTEMPTS_LEFT` and read by `reattempt::tower::OuterRetryLayer` (and,
//! to compare, without that server layer) (`reattempt_support::sim::chain`).
//!
//! ```text
//! cargo run --release --example http_chain            # 200 calls to a dead leaf, 20 000 to a flaky one
//! cargo run --release --example http_chain -- 2000     # another number of flaky calls
//! ```

use std::error::Error;

use reattempt_support::sim::chain::{Layering, Leaf, measure};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let flaky_calls: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 20_000,
    };
    let modes = [
        ("every layer retries", Layering::Every),
        ("one_layer + OuterRetryLayer", Layering::OneLayer),
        (
            "one_layer, no server layer",
            Layering::OneLayerNoServerLayer,
        ),
    ];
    println!(
        "{:<28} {:>16} {:>16} {:>14}",
        "layering", "dead: leaf/call", "10%: leaf/call", "10%: success"
    );
    for (label, layering) in modes {
        let started = std::time::Instant::now();
        let dead = measure(Leaf::Dead, layering, 200).await?;
        let flaky = measure(
            Leaf::Flaky {
                fail_percent: 10,
                seed: 17,
            },
            layering,
            flaky_calls,
        )
        .await?;
        println!(
            "{label:<28} {:>16.3} {:>16.3} {:>13.4}% ({} of {}; {:.1} s)",
            dead.leaf_per_call(),
            flaky.leaf_per_call(),
            flaky.success() * 100.0,
            flaky.ok,
            flaky.calls,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
