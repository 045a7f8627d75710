//! Success-path cost of the client-stack integrations, side by side with their alternatives:
//! the tower layer vs tower's own `retry::Retry` (a fixed-attempts policy), around a service that
//! answers at once; the reqwest-middleware `RetryMiddleware` vs reqwest-retry's
//! `RetryTransientMiddleware`, in front of a last middleware that answers 200 without a network.
//! Time per call under criterion, then allocations per call (a counting allocator), printed.
//!
//! `cargo bench -p reattempt-bench --bench integrations --features reattempt/tower,reattempt/reqwest-middleware`

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{Ready, poll_fn, ready};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use reattempt::RetryPolicy;
use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::tower::RetryLayer;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
use tower::{Layer, Service};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Answers at once.
#[derive(Clone, Copy)]
struct Echo;

impl Service<u64> for Echo {
    type Response = u64;
    type Error = std::io::Error;
    type Future = Ready<std::io::Result<u64>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, x: u64) -> Self::Future {
        ready(Ok(black_box(x)))
    }
}

/// tower's retry with 3 attempts and no backoff: the fixed-attempts policy of its docs.
#[derive(Clone, Copy)]
struct Attempts(u32);

impl<E> tower::retry::Policy<u64, u64, E> for Attempts {
    type Future = Ready<()>;
    fn retry(&mut self, _: &mut u64, result: &mut Result<u64, E>) -> Option<Self::Future> {
        if result.is_err() && self.0 > 1 {
            self.0 -= 1;
            Some(ready(()))
        } else {
            None
        }
    }
    fn clone_request(&mut self, req: &u64) -> Option<u64> {
        Some(*req)
    }
}

async fn once<S: Service<u64, Response = u64>>(svc: &mut S, x: u64) -> Option<u64> {
    poll_fn(|cx| svc.poll_ready(cx)).await.ok()?;
    svc.call(x).await.ok()
}

/// The last middleware: a 200 without a network.
struct Answer;

#[async_trait::async_trait]
impl Middleware for Answer {
    async fn handle(
        &self,
        _: reqwest::Request,
        _: &mut http::Extensions,
        _: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        Ok(reqwest::Response::from(http::Response::new("ok")))
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .build()
        .expect("valid")
}

fn ours() -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()))
        .with(Answer)
        .build()
}

fn reqwest_retry() -> ClientWithMiddleware {
    let backoff = reqwest_retry::policies::ExponentialBackoff::builder().build_with_max_retries(2);
    ClientBuilder::new(reqwest::Client::new())
        .with(reqwest_retry::RetryTransientMiddleware::new_with_policy(
            backoff,
        ))
        .with(Answer)
        .build()
}

fn no_retry() -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(Answer)
        .build()
}

async fn get(client: &ClientWithMiddleware) -> Option<u16> {
    let resp = client.get("http://127.0.0.1:9/").send().await.ok()?;
    Some(resp.status().as_u16())
}

const N: u64 = 1000;

fn integrations(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut bare = Echo;
    let mut layer = RetryLayer::new(policy()).layer(Echo);
    let mut towers = tower::retry::RetryLayer::new(Attempts(3)).layer(Echo);
    macro_rules! svc {
        ($name:literal, $svc:ident) => {
            c.bench_function($name, |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for i in 0..iters {
                            black_box(once(&mut $svc, black_box(i)).await);
                        }
                        start.elapsed()
                    })
                });
            });
        };
    }
    svc!("tower/no_retry", bare);
    svc!("tower/reattempt_layer", layer);
    svc!("tower/tower_retry", towers);

    let clients = [
        ("middleware/no_retry", no_retry()),
        ("middleware/reattempt", ours()),
        ("middleware/reqwest_retry", reqwest_retry()),
    ];
    for (name, client) in &clients {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(get(client).await);
                    }
                    start.elapsed()
                })
            });
        });
    }

    // Allocations per call, each way (after a warm-up call).
    let per_call = |f: &mut dyn FnMut()| {
        f();
        let before = ALLOCS.load(Relaxed);
        for _ in 0..N {
            f();
        }
        #[allow(clippy::cast_precision_loss)]
        let n = (ALLOCS.load(Relaxed) - before) as f64 / N as f64;
        n
    };
    println!("allocations per call:");
    println!(
        "  tower/no_retry          {:.1}",
        per_call(&mut || {
            rt.block_on(once(&mut bare, 1));
        })
    );
    println!(
        "  tower/reattempt_layer   {:.1}",
        per_call(&mut || {
            rt.block_on(once(&mut layer, 1));
        })
    );
    println!(
        "  tower/tower_retry       {:.1}",
        per_call(&mut || {
            rt.block_on(once(&mut towers, 1));
        })
    );
    for (name, client) in &clients {
        println!(
            "  {name:<23} {:.1}",
            per_call(&mut || {
                rt.block_on(get(client));
            })
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = integrations
}
criterion_main!(benches);
