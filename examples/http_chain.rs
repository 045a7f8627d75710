//! Layered amplification over real HTTP: three axum services on loopback, each a
//! `#[retryable(max_attempts = 3)]` client of the next, in front of a leaf that is dead, then
//! fails 10 % of requests. Leaf requests per top-level call and top-level success, for every layer
//! retrying, and `one_layer = true` on the inner two with the caller's attempts left carried in
//! `reattempt::http::OUTER_ATTEMPTS_LEFT` and read by `reattempt::tower::OuterRetryLayer` (and,
//! to compare, without that server layer).
//!
//! ```text
//! cargo run --release --example http_chain            # 200 calls to a dead leaf, 20 000 to a flaky one
//! cargo run --release --example http_chain -- 2000     # another number of flaky calls
//! ```
//!
//! To copy it into your own crate:
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["tower"] }   # `http` is a default feature
//! axum = { version = "0.8", default-features = false, features = ["tokio", "http1"] }
//! rand = "0.10"
//! reqwest = { version = "0.13", default-features = false }
//! tokio = { version = "1", features = ["macros", "rt", "net"] }
//! ```

use std::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use reattempt::http::{OUTER_ATTEMPTS_LEFT, outer_header};
use reattempt::retryable;
use reattempt::tower::OuterRetryLayer;

/// What the leaf service does: answer 503 to every request, or to `fail_percent` % of them
/// (drawn from a generator seeded with `seed`).
#[derive(Clone, Copy)]
enum Leaf {
    Dead,
    Flaky { fail_percent: u32, seed: u64 },
}

/// How the two inner services retry (the outer one always makes up to 3 attempts).
#[derive(Clone, Copy)]
enum Layering {
    /// Every layer makes up to 3 attempts.
    Every,
    /// The inner two are `one_layer = true`, and every service runs behind `OuterRetryLayer`.
    OneLayer,
    /// As `OneLayer`, without `OuterRetryLayer`: the header is sent, and nothing reads it.
    OneLayerNoServerLayer,
}

/// A failed hop: the next service's status, or no answer.
#[derive(Debug)]
#[allow(dead_code, reason = "read through Debug")]
enum HopError {
    Status(u16),
    Transport(String),
}

/// One service's client of the next.
struct Hop {
    client: reqwest::Client,
    next: String,
    layering: Layering,
}

/// One request to the next service, saying whether a call around it will retry.
async fn send(hop: &Hop) -> Result<(), HopError> {
    let mut request = hop.client.get(&hop.next);
    if let Some(left) = outer_header() {
        request = request.header(OUTER_ATTEMPTS_LEFT, left);
    }
    let response = request
        .send()
        .await
        .map_err(|e| HopError::Transport(e.to_string()))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(HopError::Status(response.status().as_u16()))
    }
}

#[retryable(max_attempts = 3, delay = "1ms", jitter = "none")]
async fn every(hop: &Hop) -> Result<(), HopError> {
    send(hop).await
}

#[retryable(max_attempts = 3, delay = "1ms", jitter = "none", one_layer = true)]
async fn one_layer(hop: &Hop) -> Result<(), HopError> {
    send(hop).await
}

/// A service's handler: a retrying call to the next service.
async fn relay(State(hop): State<Arc<Hop>>) -> StatusCode {
    let result = match hop.layering {
        Layering::OneLayer | Layering::OneLayerNoServerLayer => one_layer(&hop).await,
        Layering::Every => every(&hop).await,
    };
    if result.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

struct LeafState {
    leaf: Leaf,
    hits: AtomicU64,
    rng: Mutex<SmallRng>,
}

async fn leaf(State(state): State<Arc<LeafState>>) -> StatusCode {
    state.hits.fetch_add(1, Ordering::Relaxed);
    let fails = match state.leaf {
        Leaf::Dead => true,
        Leaf::Flaky { fail_percent, .. } => {
            let mut rng = state.rng.lock().unwrap();
            rng.random_range(0..100) < fail_percent
        }
    };
    if fails {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}

/// Serves `router` on a port of its own; its address.
async fn serve(router: Router) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(format!("http://{addr}/"))
}

/// What one run counted: top-level calls, their successes, and the leaf's requests.
struct Measured {
    calls: u32,
    ok: u32,
    leaf_hits: u64,
}

impl Measured {
    fn leaf_per_call(&self) -> f64 {
        #[allow(clippy::cast_precision_loss, reason = "far below 2^52")]
        let hits = self.leaf_hits as f64;
        hits / f64::from(self.calls)
    }

    fn success(&self) -> f64 {
        f64::from(self.ok) / f64::from(self.calls)
    }
}

/// Starts the leaf and three retrying services in front of it, then makes `calls` top-level
/// calls (a plain request to the outer service, no retry) one after another.
async fn measure(
    leaf_mode: Leaf,
    layering: Layering,
    calls: u32,
) -> Result<Measured, Box<dyn Error>> {
    let seed = match leaf_mode {
        Leaf::Dead => 0,
        Leaf::Flaky { seed, .. } => seed,
    };
    let state = Arc::new(LeafState {
        leaf: leaf_mode,
        hits: AtomicU64::new(0),
        rng: Mutex::new(SmallRng::seed_from_u64(seed)),
    });
    let mut next = serve(
        Router::new()
            .route("/", get(leaf))
            .with_state(Arc::clone(&state)),
    )
    .await?;
    let client = reqwest::Client::builder().no_proxy().build()?;
    // The leaf's caller, the middle service, then the outer one (which always retries).
    for layering in [layering, layering, Layering::Every] {
        let hop = Arc::new(Hop {
            client: client.clone(),
            next,
            layering,
        });
        let router = Router::new().route("/", get(relay)).with_state(hop);
        next = serve(match layering {
            // The caller's attempts left, read from the request into the handler's context.
            Layering::OneLayer => router.layer(OuterRetryLayer::new()),
            Layering::Every | Layering::OneLayerNoServerLayer => router,
        })
        .await?;
    }
    let mut ok = 0;
    for _ in 0..calls {
        ok += u32::from(client.get(&next).send().await?.status().is_success());
    }
    Ok(Measured {
        calls,
        ok,
        leaf_hits: state.hits.load(Ordering::Relaxed),
    })
}

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
