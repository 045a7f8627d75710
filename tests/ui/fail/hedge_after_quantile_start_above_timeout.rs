use reattempt::retryable;

// A quantile waits its starting delay (100 ms) until it has seen latencies: every attempt is cut
// at 50 ms before that, so the call would never hedge.
#[retryable(max_attempts = 2, timeout = "50ms", hedge_after = "p95", idempotent = true)]
async fn fetch() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
