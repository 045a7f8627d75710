//! Load: 100 000 concurrent retrying calls on a multi-thread runtime, each failing twice before
//! it succeeds. Reports the total time, the attempts made, and the memory held per call in flight
//! (a counting global allocator: the peak of live bytes above the baseline, over the calls).
//!
//! `cargo run -p reattempt-bench --release --example load` (a few seconds; `LOAD_CALLS` changes the count).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use reattempt::retryable;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, tracking the bytes live.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

#[derive(Debug)]
struct Busy;

/// Fails on its first two attempts, then succeeds.
#[retryable(max_attempts = 5, delay = "50ms", jitter = "full")]
async fn flaky(id: u32) -> Result<u32, Busy> {
    ATTEMPTS.fetch_add(1, Relaxed);
    let attempt = reattempt::context().map_or(1, |c| c.attempt());
    if attempt < 3 { Err(Busy) } else { Ok(id) }
}

fn main() {
    let calls: u32 = std::env::var("LOAD_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("runtime");
    let baseline = LIVE.load(Relaxed);
    PEAK.store(baseline, Relaxed);
    let start = Instant::now();
    let succeeded = runtime.block_on(async {
        let tasks: Vec<_> = (0..calls).map(|id| tokio::spawn(flaky(id))).collect();
        let mut succeeded = 0_u32;
        for task in tasks {
            if task.await.expect("no panic").is_ok() {
                succeeded += 1;
            }
        }
        succeeded
    });
    let elapsed = start.elapsed();
    let per_call = (PEAK.load(Relaxed) - baseline) / calls as usize;
    println!("calls in flight at once:   {calls}");
    println!("succeeded:                 {succeeded}");
    println!("attempts:                  {}", ATTEMPTS.load(Relaxed));
    println!(
        "total time:                {elapsed:.2?} (two sleeps of up to 50 ms and 100 ms each)"
    );
    println!("peak memory per call:      {per_call} bytes (task, future, join handle)");
    println!(
        "size of one call's future: {} bytes",
        std::mem::size_of_val(&flaky(0))
    );
    assert_eq!(succeeded, calls);
    assert!(elapsed < Duration::from_secs(60));
}
