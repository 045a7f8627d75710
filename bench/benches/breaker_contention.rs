//! Contention on one shared, closed circuit breaker: 1, 2 and 8 threads each making calls through
//! the same breaker (`try_acquire`, the call, `record(permit, true)`), against the same calls with
//! no breaker. Throughput is calls per second over all threads:
//! `cargo bench -p reattempt-bench --bench breaker_contention`. Mind the machine's core count when reading it: with
//! fewer cores than threads, the threads take turns rather than run at once.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reattempt::CircuitBreaker;

/// The call being guarded: as cheap as a call can be, so that the breaker's cost shows.
#[inline(never)]
fn op(x: u64) -> u64 {
    black_box(x)
}

/// Runs `calls` calls on each of `threads` threads at once; the wall time from the first
/// thread's start to the last thread's end.
fn run(threads: usize, calls: u64, call: &(impl Fn(u64) + Sync)) -> Duration {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let spans: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let t0 = Instant::now();
                    for i in 0..calls {
                        call(black_box(i));
                    }
                    (t0, Instant::now())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect();
        let first = spans.iter().map(|s| s.0).min().expect("a thread");
        let last = spans.iter().map(|s| s.1).max().expect("a thread");
        last - first
    })
}

fn contention(c: &mut Criterion) {
    let breaker = CircuitBreaker::builder().build().expect("valid");
    let mut group = c.benchmark_group("breaker_contention");
    for threads in [1usize, 2, 8] {
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_with_input(
            BenchmarkId::new("no_breaker", threads),
            &threads,
            |b, &n| {
                b.iter_custom(|iters| {
                    run(n, iters, &|i| {
                        black_box(op(i));
                    })
                });
            },
        );
        group.bench_with_input(BenchmarkId::new("breaker", threads), &threads, |b, &n| {
            b.iter_custom(|iters| {
                run(n, iters, &|i| {
                    if let Ok(permit) = breaker.try_acquire() {
                        black_box(op(i));
                        breaker.record(permit, true);
                    }
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, contention);
criterion_main!(benches);
