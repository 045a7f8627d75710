//! Overload control through `#[retryable]`, under tokio's paused clock: `one_layer`, `throttle`
//! and `bulkhead`, and their rejections reaching `#[recover]`.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::{AdaptiveThrottle, Bulkhead, BulkheadFull, Throttled, recover, retryable};

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Down,
    Shed,
    Busy,
}

impl From<Throttled> for ApiError {
    fn from(_: Throttled) -> Self {
        ApiError::Shed
    }
}

impl From<BulkheadFull> for ApiError {
    fn from(_: BulkheadFull) -> Self {
        ApiError::Busy
    }
}

static LEAF: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 3, delay = "1ms", one_layer = true)]
async fn leaf_caller() -> Result<(), ApiError> {
    LEAF.fetch_add(1, SeqCst);
    Err(ApiError::Down)
}

#[retryable(max_attempts = 3, delay = "1ms", one_layer = true)]
async fn middle() -> Result<(), ApiError> {
    leaf_caller().await
}

#[retryable(max_attempts = 3, delay = "1ms")]
async fn top() -> Result<(), ApiError> {
    middle().await
}

#[tokio::test(start_paused = true)]
async fn one_layer_through_the_attribute() {
    LEAF.store(0, SeqCst);
    assert_eq!(top().await, Err(ApiError::Down));
    assert_eq!(LEAF.load(SeqCst), 7, "27 without one_layer");
    LEAF.store(0, SeqCst);
    assert_eq!(leaf_caller().await, Err(ApiError::Down));
    assert_eq!(LEAF.load(SeqCst), 3, "alone, it retries as usual");
}

static THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());
static SENT: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 3, delay = "1ms", throttle = THROTTLE, recover = shed_fallback)]
async fn throttled_call() -> Result<&'static str, ApiError> {
    SENT.fetch_add(1, SeqCst);
    Err(ApiError::Down)
}

#[recover]
async fn shed_fallback(err: ApiError) -> Result<&'static str, ApiError> {
    match err {
        ApiError::Shed => Ok("shed"),
        other => Err(other),
    }
}

#[tokio::test(start_paused = true)]
async fn the_throttle_sheds_and_the_rejection_reaches_recover() {
    reattempt::seed_rng(5);
    let mut shed = 0;
    for _ in 0..200 {
        if throttled_call().await == Ok("shed") {
            shed += 1;
        }
    }
    let (requests, accepts) = THROTTLE.counts();
    assert_eq!(accepts, 0);
    assert!(shed > 150, "nearly every call ends shed: {shed}");
    assert!(
        u64::from(SENT.load(SeqCst)) < requests / 5,
        "most requests never reach the dependency: {} of {requests}",
        SENT.load(SeqCst)
    );
}

static BULKHEAD: LazyLock<Bulkhead> =
    LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
static MADE: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 2, delay = "10s", bulkhead = BULKHEAD, recover = busy_fallback)]
async fn bulkheaded() -> Result<&'static str, ApiError> {
    MADE.fetch_add(1, SeqCst);
    Err(ApiError::Down)
}

#[recover]
async fn busy_fallback(err: ApiError) -> Result<&'static str, ApiError> {
    match err {
        ApiError::Busy => Ok("busy"),
        other => Err(other),
    }
}

#[retryable(max_attempts = 2, delay = "1ms", bulkhead = BULKHEAD)]
fn blocking_bulkheaded() -> Result<u32, ApiError> {
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_slot_is_held_through_the_sleep_and_a_rejection_reaches_recover() {
    let first = tokio::spawn(bulkheaded());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        BULKHEAD.in_flight(),
        1,
        "asleep between retries, holding its slot"
    );
    assert_eq!(bulkheaded().await, Ok("busy"));
    assert_eq!(blocking_bulkheaded(), Err(ApiError::Busy));
    assert_eq!(MADE.load(SeqCst), 1, "no attempt for the calls turned away");
    assert_eq!(first.await.unwrap(), Err(ApiError::Down));
    assert_eq!(BULKHEAD.in_flight(), 0);
    assert_eq!(blocking_bulkheaded(), Ok(1));
}

static HEDGED_BULKHEAD: LazyLock<Bulkhead> =
    LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
static HEDGED_THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());
static HEDGED_SENT: AtomicU32 = AtomicU32::new(0);

/// Hedged after 50 ms; the first copy hangs for a second, the others answer in 10 ms.
#[retryable(
    max_attempts = 3,
    hedge_after = "50ms",
    throttle = HEDGED_THROTTLE,
    bulkhead = HEDGED_BULKHEAD
)]
async fn hedged_guarded() -> Result<u32, ApiError> {
    let n = HEDGED_SENT.fetch_add(1, SeqCst) + 1;
    assert_eq!(HEDGED_BULKHEAD.in_flight(), 1, "one slot for every copy");
    tokio::time::sleep(Duration::from_millis(if n == 1 { 1000 } else { 10 })).await;
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn a_hedged_function_honours_its_throttle_and_bulkhead() {
    // A dependency that accepted what it was sent: nothing is shed.
    for _ in 0..10 {
        HEDGED_THROTTLE.try_acquire().unwrap();
        HEDGED_THROTTLE.record(true);
    }
    assert_eq!(hedged_guarded().await, Ok(2), "the hedge answered first");
    assert_eq!(
        HEDGED_THROTTLE.counts(),
        (12, 11),
        "each copy asked the throttle"
    );
    assert_eq!(HEDGED_BULKHEAD.in_flight(), 0);
    let held = HEDGED_BULKHEAD.try_acquire().unwrap();
    assert_eq!(hedged_guarded().await, Err(ApiError::Busy));
    assert_eq!(HEDGED_SENT.load(SeqCst), 2, "turned away: no attempt made");
    drop(held);
}
