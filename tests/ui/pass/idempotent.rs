//! `idempotent` beside the keys it goes with: a hedge, a timeout, `retry_if`.
use std::time::Duration;

use reattempt::retryable;

#[retryable(max_attempts = 3, hedge_after = "50ms", idempotent = true, timeout = "1s")]
async fn read(calls: &std::sync::atomic::AtomicU32) -> Result<u32, std::io::Error> {
    calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(1)
}

#[retryable(retry_if = reattempt::transient, idempotent = false)]
async fn write() -> Result<u32, std::io::Error> {
    Ok(2)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let calls = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(read(&calls).await.unwrap(), 1);
    assert_eq!(write().await.unwrap(), 2);
}
