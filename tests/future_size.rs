//! The function's future is no larger than a hand-written loop that keeps its delay (the design's
//! number), whatever the compiler's layout of async functions: both are laid out by the same
//! compiler here, so the comparison holds from one toolchain to the next. The sizes themselves
//! are in BENCHMARKS.md (`cargo run -p reattempt-bench --release --example overhead_report`),
//! with the guards' rows. This build is not quite a user's: the facade's tests build the runtime
//! with feature `testing` (through reattempt-support), whose fault injection adds 24 bytes to
//! every call's state; the attribute's future fits even so.

use std::io;
use std::sync::LazyLock;
use std::time::Duration;

use reattempt::{CircuitBreaker, RetryBudget, retryable};

async fn op(x: u64) -> io::Result<u64> {
    tokio::task::yield_now().await;
    Ok(x)
}

/// What a careful engineer writes by hand: 3 attempts, 100 ms doubling.
async fn hand_loop(x: u64) -> io::Result<u64> {
    let mut attempt = 1;
    let mut delay = Duration::from_millis(100);
    loop {
        match op(x).await {
            Ok(v) => return Ok(v),
            Err(_) if attempt < 3 => {
                tokio::time::sleep(delay).await;
                delay *= 2;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[retryable]
async fn attribute(x: u64) -> io::Result<u64> {
    op(x).await
}

static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().expect("valid"));

#[retryable(circuit_breaker = BREAKER)]
async fn with_breaker(x: u64) -> io::Result<u64> {
    op(x).await
}

static BUDGET: LazyLock<RetryBudget> =
    LazyLock::new(|| RetryBudget::builder().build().expect("valid"));

#[retryable(budget = BUDGET)]
async fn with_budget(x: u64) -> io::Result<u64> {
    op(x).await
}

#[test]
fn the_attributes_future_is_no_larger_than_a_hand_loop() {
    let hand = size_of_val(&hand_loop(1));
    let attribute = size_of_val(&attribute(1));
    // The feature `spans` adds the call's spans to its state: one word, boxed, the span code's
    // whole footprint in the future (the design's number is the default build's).
    let spans = if cfg!(feature = "spans") {
        size_of::<usize>()
    } else {
        0
    };
    assert!(
        attribute <= hand + spans,
        "#[retryable]'s future is {attribute} bytes, the hand-written loop's {hand}"
    );
}

/// The futures still run: the sizes above are of working calls, and the boxed sleep between
/// attempts still sleeps (on the paused clock: 3 attempts, 2 sleeps).
#[tokio::test(start_paused = true)]
async fn the_measured_futures_retry_and_sleep() {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none")]
    async fn flaky() -> io::Result<u32> {
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if n < 3 {
            Err(io::ErrorKind::ConnectionRefused.into())
        } else {
            Ok(n)
        }
    }
    let start = tokio::time::Instant::now();
    assert_eq!(flaky().await.unwrap(), 3);
    assert_eq!(start.elapsed(), Duration::from_millis(100 + 200));
    assert_eq!(attribute(7).await.unwrap(), 7);
    assert_eq!(with_breaker(8).await.unwrap(), 8);
    assert_eq!(with_budget(9).await.unwrap(), 9);
}
