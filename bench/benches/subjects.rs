//! The same successful call made five ways, shared by `bench/benches/overhead.rs` and
//! `bench/examples/overhead_report.rs` so that both measure exactly the same code. None of them fails.
#![allow(clippy::missing_errors_doc)]

use std::hint::black_box;
use std::io;
use std::time::Duration;

use std::sync::LazyLock;

use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy, retryable};

/// The remote call being retried: succeeds at once. Not inlined, so every variant pays one call.
#[inline(never)]
#[allow(
    clippy::unused_async,
    reason = "it stands for a remote call, which awaits"
)]
pub async fn op(x: u64) -> io::Result<u64> {
    Ok(black_box(x))
}

/// No retrying at all.
pub async fn plain(x: u64) -> io::Result<u64> {
    op(x).await
}

/// What a careful engineer writes by hand: 3 attempts, 100 ms doubling.
pub async fn hand_loop(x: u64) -> io::Result<u64> {
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

/// The hand loop with each attempt wrapped in `tokio::time::timeout` (1 s): what
/// `#[retryable(timeout = "1s")]` is held against.
pub async fn hand_loop_timeout(x: u64) -> io::Result<u64> {
    let mut attempt = 1;
    let mut delay = Duration::from_millis(100);
    loop {
        let outcome = match tokio::time::timeout(Duration::from_secs(1), op(x)).await {
            Ok(outcome) => outcome,
            Err(elapsed) => Err(io::Error::new(io::ErrorKind::TimedOut, elapsed)),
        };
        match outcome {
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

/// The attribute with its defaults (3 attempts, 100 ms exponential, full jitter).
#[retryable]
pub async fn attribute(x: u64) -> io::Result<u64> {
    op(x).await
}

/// The attribute with a per-attempt timeout (a timer is armed for every attempt).
#[retryable(timeout = "1s")]
pub async fn attribute_timeout(x: u64) -> io::Result<u64> {
    op(x).await
}

static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().expect("valid"));

static BUDGET: LazyLock<RetryBudget> =
    LazyLock::new(|| RetryBudget::builder().build().expect("valid"));

/// The attribute with a closed circuit breaker: every attempt takes and returns a permit.
#[retryable(circuit_breaker = BREAKER)]
pub async fn attribute_breaker(x: u64) -> io::Result<u64> {
    op(x).await
}

/// The attribute with a retry budget: a success pays a token back (a full bucket stays full).
#[retryable(budget = BUDGET)]
pub async fn attribute_budget(x: u64) -> io::Result<u64> {
    op(x).await
}

static POLICY: RetryPolicy = match RetryPolicy::builder().build() {
    Ok(p) => p,
    Err(_) => panic!("valid"),
};

/// The closure API with the default policy.
pub async fn closure(x: u64) -> io::Result<u64> {
    POLICY.retry(|| op(x)).await
}

/// backon 1.6 with the same schedule: 3 attempts, exponential, jittered.
pub async fn backon(x: u64) -> io::Result<u64> {
    use backon::{ExponentialBuilder, Retryable};
    let schedule = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_jitter()
        .with_max_times(2);
    (|| op(x)).retry(schedule).await
}

/// tokio-retry 0.3 with the same schedule: 100 ms doubling, jittered, 2 retries.
pub async fn tokio_retry(x: u64) -> io::Result<u64> {
    use tokio_retry::strategy::{ExponentialBackoff, jitter};
    let schedule = ExponentialBackoff::from_millis(2)
        .factor(50)
        .map(jitter)
        .take(2);
    tokio_retry::Retry::start(schedule, || op(x)).await
}
