// Envoy's circuit-breaker threshold, a concurrency limit (a bulkhead here).
use reattempt::retryable;

#[retryable(max_pending_requests = 100)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
