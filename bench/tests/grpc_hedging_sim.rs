//! The hedging simulation (`reattempt_bench::sim::hedge`), driven through the gRPC layer: the
//! scenario of `tests/simulations.rs` (ten replicas, each serving one request at a time from a
//! FIFO queue, service times lognormal around 10 ms with 1.5 % stragglers ×10, 30 % load, 0.5 ms
//! of network each way, a hedge after 50 ms), run as real tokio tasks under the paused clock.
//! Every call goes through `GrpcRetryLayer` to an in-process service standing for the replicas:
//! a copy waiting in a queue is removed when the layer cancels it, one being served is served to
//! the end (wasted work). The same seeds drive both runs. A6 hedging (a second copy after
//! `hedgingDelay`) cuts the p99 at low load for a few percent more requests, as the simulation
//! finds with the engine's steps alone.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use rand::{RngExt, SeedableRng, rngs::SmallRng};
use reattempt::tonic::{GrpcRetryLayer, HedgingPolicy};
use reattempt_bench::sim::hedge::Scenario;
use tokio::time::Instant;
use tonic::Code;
use tonic::body::Body;
use tower_layer::Layer;
use tower_service::Service;

/// The scenario of `tests/simulations.rs`'s hedging test, at low load.
const SCENARIO: Scenario = Scenario {
    replicas: 10,
    median: Duration::from_millis(10),
    sigma: 0.4,
    straggler_rate: 0.015,
    straggler_factor: 10.0,
    utilisation: 0.3,
    calls: 3000,
    seed: 3,
};
const REPLICAS: u32 = SCENARIO.replicas;
const CALLS: usize = SCENARIO.calls as usize;
/// The network's delay each way.
const NET: Duration = Duration::from_micros(500);

/// The replicas: each a FIFO queue (tokio's mutex is fair) in front of one server.
#[derive(Clone)]
struct Replicas {
    queues: Arc<Vec<Arc<tokio::sync::Mutex<()>>>>,
    rng: Arc<Mutex<SmallRng>>,
    /// Requests that reached a server (were served, whole or cancelled while served).
    served: Arc<Mutex<usize>>,
}

impl Replicas {
    fn new(seed: u64) -> Self {
        Replicas {
            queues: Arc::new(
                (0..REPLICAS)
                    .map(|_| Arc::new(tokio::sync::Mutex::new(())))
                    .collect(),
            ),
            rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))),
            served: Arc::new(Mutex::new(0)),
        }
    }

    /// A service time: lognormal around the median, ×10 for a straggler.
    fn service_time(&self) -> (usize, Duration) {
        let mut rng = self.rng.lock().unwrap();
        let replica = rng.random_range(0..REPLICAS as usize);
        // Box-Muller: a standard normal draw.
        let (u1, u2): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
        let normal = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let mut seconds = SCENARIO.median.as_secs_f64() * (SCENARIO.sigma * normal).exp();
        if rng.random_bool(SCENARIO.straggler_rate) {
            seconds *= SCENARIO.straggler_factor;
        }
        (replica, Duration::from_secs_f64(seconds))
    }
}

impl Service<http::Request<Body>> for Replicas {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        let (replica, time) = self.service_time();
        let queue = Arc::clone(&self.queues[replica]);
        let served = Arc::clone(&self.served);
        Box::pin(async move {
            tokio::time::sleep(NET).await;
            // Dropped here (cancelled in the queue): the replica never sees it.
            let slot = queue.lock_owned().await;
            *served.lock().unwrap() += 1;
            let (done, finished) = tokio::sync::oneshot::channel();
            // Once started, the replica serves it to the end, even if the copy is cancelled.
            tokio::spawn(async move {
                tokio::time::sleep(time).await;
                drop(slot);
                let _ = done.send(());
            });
            let _ = finished.await;
            tokio::time::sleep(NET).await;
            Ok(http::Response::builder()
                .header("content-type", "application/grpc")
                .body(Body::empty())
                .unwrap())
        })
    }
}

struct Run {
    p50: Duration,
    p99: Duration,
    served: usize,
}

/// Runs the open stream of calls through `layer` (or none) and measures each call's latency.
async fn run(layer: Option<GrpcRetryLayer>) -> Run {
    let replicas = Replicas::new(7);
    let mut arrivals = SmallRng::seed_from_u64(11);
    let rate = SCENARIO.arrival_rate();
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(CALLS)));
    let mut next = Instant::now();
    let mut tasks = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let gap: f64 = -arrivals.random_range(f64::EPSILON..1.0_f64).ln() / rate;
        next += Duration::from_secs_f64(gap);
        let at = next;
        let latencies = Arc::clone(&latencies);
        let request = || {
            http::Request::post("/grpc.health.v1.Health/Check")
                .body(Body::empty())
                .unwrap()
        };
        let call: Pin<Box<dyn Future<Output = bool> + Send>> = if let Some(layer) = &layer {
            let mut service = layer.layer(replicas.clone());
            Box::pin(async move { service.call(request()).await.is_ok() })
        } else {
            let mut service = replicas.clone();
            Box::pin(async move { service.call(request()).await.is_ok() })
        };
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let started = Instant::now();
            assert!(call.await);
            latencies.lock().unwrap().push(started.elapsed());
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut latencies = latencies.lock().unwrap().clone();
    // The first tenth is a warm-up.
    latencies.drain(..CALLS / 10);
    latencies.sort();
    // The q-quantile by rank (q in hundredths).
    let at = |q: usize| latencies[(latencies.len() - 1) * q / 100];
    let served = *replicas.served.lock().unwrap();
    Run {
        p50: at(50),
        p99: at(99),
        served,
    }
}

#[tokio::test(start_paused = true)]
async fn hedging_through_the_layer_cuts_the_p99_at_low_load() {
    let unhedged = run(None).await;
    // `Strategy::Fixed(50 ms)` of the simulation: one hedge, 50 ms after the first copy.
    let policy = HedgingPolicy::new(2, Duration::from_millis(50), &[Code::Unavailable]).unwrap();
    let hedged = run(Some(GrpcRetryLayer::hedging(policy))).await;
    println!(
        "unhedged: p50 {:?} p99 {:?} served {}; hedged: p50 {:?} p99 {:?} served {}",
        unhedged.p50, unhedged.p99, unhedged.served, hedged.p50, hedged.p99, hedged.served
    );
    assert!(
        hedged.p99 < unhedged.p99.mul_f64(0.7),
        "hedged p99 {:?} vs unhedged {:?}",
        hedged.p99,
        unhedged.p99
    );
    // The median is not the hedge's doing, and the extra load stays small.
    assert!(hedged.p50 <= unhedged.p50.mul_f64(1.2));
    assert!(
        hedged.served < unhedged.served * 13 / 10,
        "{} hedged requests served",
        hedged.served
    );
    assert!(hedged.served > unhedged.served, "some hedges were sent");
}
