//! One table of the success path's costs, each way of calling: allocations per call (a counting
//! global allocator), the future's size (`size_of_val`) and a rough time per call.
//! Run in release mode: `cargo run -p reattempt-bench --release --example overhead_report`.
//! (Precise times: `cargo bench -p reattempt-bench --bench overhead`. Repeatable instruction counts per call, each way
//! measured alone under callgrind: `bash bench/benches/instructions.sh`; it uses `OVERHEAD_ONLY=<name>`
//! and `OVERHEAD_CALLS=<n>` to run one row for n calls.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

#[path = "../benches/subjects.rs"]
mod subjects;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Calls per variant; `OVERHEAD_CALLS` lowers it for a run under callgrind.
fn calls() -> u64 {
    std::env::var("OVERHEAD_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000)
}

fn measure<F, Fut>(rt: &tokio::runtime::Runtime, name: &str, f: F)
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = std::io::Result<u64>>,
{
    if std::env::var("OVERHEAD_ONLY").is_ok_and(|only| only != name) {
        return;
    }
    let size = std::mem::size_of_val(&f(0));
    let (allocations, nanos) = rt.block_on(async {
        for i in 0..1000 {
            black_box(f(i).await.ok());
        }
        let before = ALLOCATIONS.load(Relaxed);
        let start = Instant::now();
        for i in 0..calls() {
            black_box(f(black_box(i)).await.ok());
        }
        let elapsed = start.elapsed();
        (
            ALLOCATIONS.load(Relaxed) - before,
            elapsed.as_secs_f64() * 1e9,
        )
    });
    #[allow(clippy::cast_precision_loss, reason = "a ratio for display")]
    let per_call_allocs = allocations as f64 / calls() as f64;
    #[allow(clippy::cast_precision_loss, reason = "a ratio for display")]
    let per_call_ns = nanos / calls() as f64;
    println!("| {name:<21} | {per_call_ns:>8.2} | {per_call_allocs:>11.3} | {size:>12} |");
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    println!("| way of calling        | ns/call  | allocs/call | future bytes |");
    println!("|-----------------------|----------|-------------|--------------|");
    measure(&rt, "plain", subjects::plain);
    measure(&rt, "hand_loop", subjects::hand_loop);
    measure(&rt, "hand_loop timeout", subjects::hand_loop_timeout);
    measure(&rt, "#[retryable]", subjects::attribute);
    measure(&rt, "#[retryable] timeout", subjects::attribute_timeout);
    measure(&rt, "#[retryable] breaker", subjects::attribute_breaker);
    measure(&rt, "#[retryable] budget", subjects::attribute_budget);
    measure(&rt, "closure API", subjects::closure);
    measure(&rt, "backon 1.6", subjects::backon);
    measure(&rt, "tokio-retry 0.3", subjects::tokio_retry);
}
