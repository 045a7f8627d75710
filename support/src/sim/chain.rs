//! Layered amplification over real HTTP: three services on loopback (axum), each a
//! `#[retryable(max_attempts = 3)]` client of the next, the last calling a leaf service that is
//! dead or fails a share of its requests. A plain client (no retry) calls the first service.
//!
//! [`Layering`] says how the two inner services retry: every layer retries
//! ([`Layering::Every`]); or the inner two set `one_layer = true` ([`Layering::OneLayer`]). Every
//! request a service makes carries `reattempt::http::OUTER_ATTEMPTS_LEFT` when the call it is
//! made in (or the caller of the request it serves) still has attempts left
//! (`reattempt::http::outer_header`), and each service runs its handler behind
//! `reattempt::tower::OuterRetryLayer`, which reads it back: so `one_layer` sees the caller in
//! the other process. [`Layering::OneLayerNoServerLayer`] leaves that layer out, to show what
//! it does: `one_layer` reads the retry context, which follows the poll, and a handler runs in
//! its own task, where no outer call is in sight without it.

use std::net::SocketAddr;
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

/// What the leaf service does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// Answers 503 to every request.
    Dead,
    /// Answers 503 to `fail_percent` % of requests, drawn from a generator seeded with `seed`
    /// (the same sequence of answers in every run whose requests arrive in the same order).
    Flaky {
        /// Percentage of requests that fail.
        fail_percent: u32,
        /// The generator's seed.
        seed: u64,
    },
}

/// How the two inner services retry (the outer one always retries, 3 attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layering {
    /// Every layer makes up to 3 attempts.
    Every,
    /// The inner two are `#[retryable(max_attempts = 3, one_layer = true)]`, and every service
    /// runs behind `OuterRetryLayer`.
    OneLayer,
    /// As [`Layering::OneLayer`], without `OuterRetryLayer` on the services: the header is sent,
    /// and nothing reads it.
    OneLayerNoServerLayer,
}

/// A failed hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HopError {
    /// The next service answered this status.
    Status(u16),
    /// No answer (the message of the transport error).
    Transport(String),
}

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
    hits: Arc<AtomicU64>,
    rng: Mutex<SmallRng>,
}

async fn leaf(State(state): State<Arc<LeafState>>) -> StatusCode {
    state.hits.fetch_add(1, Ordering::Relaxed);
    let fails = match state.leaf {
        Leaf::Dead => true,
        Leaf::Flaky { fail_percent, .. } => {
            let mut rng = state
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            rng.random_range(0..100) < fail_percent
        }
    };
    if fails {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}

async fn serve(router: Router) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

/// The running chain: the leaf and three retrying services, each on its own port.
pub struct Chain {
    client: reqwest::Client,
    top: String,
    leaf_hits: Arc<AtomicU64>,
}

impl Chain {
    /// Starts the four services on the current tokio runtime.
    ///
    /// # Errors
    /// If a port cannot be bound.
    pub async fn start(leaf_mode: Leaf, layering: Layering) -> std::io::Result<Chain> {
        let hits = Arc::new(AtomicU64::new(0));
        let seed = match leaf_mode {
            Leaf::Dead => 0,
            Leaf::Flaky { seed, .. } => seed,
        };
        let state = Arc::new(LeafState {
            leaf: leaf_mode,
            hits: Arc::clone(&hits),
            rng: Mutex::new(SmallRng::seed_from_u64(seed)),
        });
        let mut next = serve(Router::new().route("/", get(leaf)).with_state(state)).await?;
        let client = reqwest::Client::new();
        // The leaf's caller, the middle service, then the outer one (which always retries).
        for layering in [layering, layering, Layering::Every] {
            let hop = Arc::new(Hop {
                client: client.clone(),
                next: format!("http://{next}/"),
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
        Ok(Chain {
            client,
            top: format!("http://{next}/"),
            leaf_hits: hits,
        })
    }

    /// One top-level call (a single request to the outer service): whether it succeeded.
    ///
    /// # Errors
    /// If the outer service does not answer.
    pub async fn call(&self) -> Result<bool, reqwest::Error> {
        let response = self.client.get(&self.top).send().await?;
        Ok(response.status().is_success())
    }

    /// Requests the leaf has received so far.
    pub fn leaf_hits(&self) -> u64 {
        self.leaf_hits.load(Ordering::Relaxed)
    }
}

/// What [`measure`] counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Top-level calls made.
    pub calls: u32,
    /// Of those, successes.
    pub ok: u32,
    /// Requests the leaf received.
    pub leaf_hits: u64,
}

impl Measured {
    /// Leaf requests per top-level call.
    pub fn leaf_per_call(&self) -> f64 {
        #[allow(clippy::cast_precision_loss, reason = "far below 2^52")]
        let hits = self.leaf_hits as f64;
        hits / f64::from(self.calls)
    }

    /// Share of top-level calls that succeeded.
    pub fn success(&self) -> f64 {
        f64::from(self.ok) / f64::from(self.calls)
    }
}

/// Starts a chain and makes `calls` top-level calls one after another.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use reattempt_support::sim::chain::{Layering, Leaf, measure};
///
/// let dead = measure(Leaf::Dead, Layering::Every, 1).await.unwrap();
/// assert_eq!((dead.ok, dead.leaf_hits), (0, 27), "3 × 3 × 3");
/// let one_layer = measure(Leaf::Dead, Layering::OneLayer, 1).await.unwrap();
/// assert_eq!(one_layer.leaf_hits, 7, "2 + 2 + 3");
/// # }
/// ```
///
/// # Errors
/// If a port cannot be bound or a service does not answer.
pub async fn measure(
    leaf: Leaf,
    layering: Layering,
    calls: u32,
) -> Result<Measured, Box<dyn std::error::Error>> {
    let chain = Chain::start(leaf, layering).await?;
    let mut ok = 0;
    for _ in 0..calls {
        ok += u32::from(chain.call().await?);
    }
    Ok(Measured {
        calls,
        ok,
        leaf_hits: chain.leaf_hits(),
    })
}
