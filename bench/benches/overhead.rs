//! Success-path cost of one call, each way, in one run: `cargo bench -p reattempt-bench --bench overhead`.
//! Each sample runs its calls inside one `block_on`, so the runtime's entry is not measured.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};

mod subjects;

macro_rules! bench_async {
    ($c:expr, $rt:expr, $name:literal, $f:path) => {
        $c.bench_function($name, |b| {
            b.iter_custom(|iters| {
                $rt.block_on(async {
                    let start = Instant::now();
                    for i in 0..iters {
                        black_box($f(black_box(i)).await.ok());
                    }
                    start.elapsed()
                })
            });
        });
    };
}

fn overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    bench_async!(c, rt, "plain", subjects::plain);
    bench_async!(c, rt, "hand_loop", subjects::hand_loop);
    bench_async!(c, rt, "hand_loop_timeout", subjects::hand_loop_timeout);
    bench_async!(c, rt, "retryable", subjects::attribute);
    bench_async!(c, rt, "retryable_timeout", subjects::attribute_timeout);
    bench_async!(c, rt, "retryable_breaker", subjects::attribute_breaker);
    bench_async!(c, rt, "retryable_budget", subjects::attribute_budget);
    bench_async!(c, rt, "closure_api", subjects::closure);
    bench_async!(c, rt, "backon", subjects::backon);
    bench_async!(c, rt, "tokio_retry", subjects::tokio_retry);
}

criterion_group!(benches, overhead);
criterion_main!(benches);
