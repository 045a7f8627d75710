//! Circuit breaker, retry budget, nested deadlines and run-time policies through `#[retryable]`,
//! under tokio's paused clock.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::{
    BreakerState, CircuitBreaker, Jitter, RetryBudget, RetryPolicy, recover, retryable,
};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Unavailable,
    BadRequest,
    CircuitOpen,
    Timeout,
}

impl From<reattempt::BreakerOpen> for ApiError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        ApiError::CircuitOpen
    }
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::Timeout
    }
}

/// A dependency that is down while `down` is set; counts the requests that reach it.
struct Dependency {
    down: AtomicBool,
    requests: AtomicU32,
}

impl Dependency {
    const fn new(down: bool) -> Self {
        Dependency {
            down: AtomicBool::new(down),
            requests: AtomicU32::new(0),
        }
    }

    fn call(&self) -> Result<u32, ApiError> {
        self.requests.fetch_add(1, SeqCst);
        if self.down.load(SeqCst) {
            Err(ApiError::Unavailable)
        } else {
            Ok(1)
        }
    }
}

// ---------------------------------------------------------------- circuit breaker

struct Client {
    dependency: Dependency,
    breaker: CircuitBreaker,
    recovered: AtomicU32,
}

impl Client {
    fn new() -> Self {
        Client {
            dependency: Dependency::new(true),
            breaker: CircuitBreaker::builder()
                .failure_threshold(3)
                .reset_timeout(Duration::from_secs(10))
                .half_open_probes(2)
                .build()
                .unwrap(),
            recovered: AtomicU32::new(0),
        }
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none",
                retry_on = [ApiError::Unavailable], circuit_breaker = self.breaker,
                recover = Self::fallback)]
    async fn fetch(&self) -> Result<u32, ApiError> {
        self.dependency.call()
    }

    #[recover]
    async fn fallback(&self, err: ApiError) -> Result<u32, ApiError> {
        self.recovered.fetch_add(1, SeqCst);
        Err(err)
    }
}

#[tokio::test(start_paused = true)]
async fn the_breaker_opens_rejects_without_calling_probes_and_closes() {
    let c = Client::new();
    // Three failed attempts in one call trip the breaker (threshold 3).
    assert_eq!(c.fetch().await, Err(ApiError::Unavailable));
    assert_eq!(c.dependency.requests.load(SeqCst), 3);
    assert_eq!(c.breaker.state(), BreakerState::Open);

    // While open: rejected at once, not retried, nothing sent, and recover still runs.
    let start = Instant::now();
    assert_eq!(c.fetch().await, Err(ApiError::CircuitOpen));
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(c.dependency.requests.load(SeqCst), 3);
    assert_eq!(c.recovered.load(SeqCst), 2);

    // After reset_timeout the dependency is back: two probes succeed and close the breaker.
    tokio::time::sleep(Duration::from_secs(10)).await;
    c.dependency.down.store(false, SeqCst);
    assert_eq!(c.fetch().await, Ok(1));
    assert_eq!(c.breaker.state(), BreakerState::HalfOpen);
    assert_eq!(c.fetch().await, Ok(1));
    assert_eq!(c.breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_the_breaker() {
    let c = Client::new();
    let _ = c.fetch().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    // The probe fails: open again, and the retry within the same call is rejected; the call
    // (and its `#[recover]` fallback) sees the probe's real error, not the rejection.
    let recovered = c.recovered.load(SeqCst);
    assert_eq!(c.fetch().await, Err(ApiError::Unavailable));
    assert_eq!(
        c.recovered.load(SeqCst),
        recovered + 1,
        "the fallback ran with it"
    );
    assert_eq!(c.dependency.requests.load(SeqCst), 4);
    assert_eq!(c.breaker.state(), BreakerState::Open);
}

static SHARED_BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(|| {
    CircuitBreaker::builder()
        .failure_threshold(50)
        .reset_timeout(Duration::from_secs(5))
        .half_open_probes(5)
        .build()
        .unwrap()
});

static SHARED_BUDGET: LazyLock<RetryBudget> =
    LazyLock::new(|| RetryBudget::builder().build().unwrap());

static FLAKY: Dependency = Dependency::new(true);

#[retryable(max_attempts = 3, delay = "50ms", retry_on = [ApiError::Unavailable],
            circuit_breaker = SHARED_BREAKER, budget = SHARED_BUDGET)]
async fn shared_call() -> Result<u32, ApiError> {
    tokio::time::sleep(MS).await;
    FLAKY.call()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_through_one_breaker_and_one_budget() {
    // Real time here: the tasks race on both cores.
    let tasks: Vec<_> = (0..1000).map(|_| tokio::spawn(shared_call())).collect();
    let mut rejected = 0;
    let mut failed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Err(ApiError::CircuitOpen) => rejected += 1,
            Err(ApiError::Unavailable) => failed += 1,
            other => panic!("{other:?}"),
        }
    }
    let requests = FLAKY.requests.load(SeqCst);
    // A call turned away at once ends with the rejection; a call whose retry was turned away
    // ends with the dependency's error (how many of each depends on how the tasks raced).
    assert_eq!(rejected + failed, 1000);
    assert_eq!(
        SHARED_BREAKER.state(),
        BreakerState::Open,
        "the breaker opened under the storm"
    );
    // Every request that reached the dependency was a first attempt or a paid-for retry. The
    // dependency never succeeds, so the tokens gone are the retries made (a retry the breaker
    // rejected was refunded), 5 each, and at most 500 / 5 of them.
    let paid = (500 - SHARED_BUDGET.available()) / 5;
    assert_eq!(SHARED_BUDGET.available() % 5, 0);
    assert!(paid <= 100, "at most 500 / 5 retries were paid for: {paid}");
    assert!(
        requests <= 1000 + paid,
        "{requests} requests, {paid} paid retries"
    );
}

// ---------------------------------------------------------------- retry budget

struct Budgeted {
    dependency: Dependency,
    budget: RetryBudget,
}

impl Budgeted {
    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", budget = self.budget)]
    async fn fetch(&self) -> Result<u32, ApiError> {
        self.dependency.call()
    }
}

#[tokio::test(start_paused = true)]
async fn ten_tokens_at_cost_five_pay_for_exactly_two_retries() {
    let b = Budgeted {
        dependency: Dependency::new(true),
        budget: RetryBudget::builder()
            .max_tokens(10)
            .retry_cost(5)
            .success_deposit(0)
            .build()
            .unwrap(),
    };
    assert_eq!(b.fetch().await, Err(ApiError::Unavailable));
    assert_eq!(b.dependency.requests.load(SeqCst), 3, "1 + 2 retries");
    assert_eq!(b.budget.available(), 0);
    assert_eq!(b.fetch().await, Err(ApiError::Unavailable));
    assert_eq!(b.dependency.requests.load(SeqCst), 4, "no token: no retry");
}

#[tokio::test(start_paused = true)]
async fn successes_refill_the_budget() {
    let b = Budgeted {
        dependency: Dependency::new(false),
        budget: RetryBudget::builder()
            .max_tokens(10)
            .retry_cost(5)
            .build()
            .unwrap(),
    };
    b.dependency.down.store(true, SeqCst);
    let _ = b.fetch().await;
    assert_eq!(b.budget.available(), 0);
    b.dependency.down.store(false, SeqCst);
    for _ in 0..7 {
        assert_eq!(b.fetch().await, Ok(1));
    }
    assert_eq!(b.budget.available(), 7);
}

/// Attempts per logical call during a total outage, with and without the default budget.
async fn outage_amplification(budget: Option<&RetryBudget>) -> f64 {
    let dependency = Dependency::new(true);
    let none = RetryBudget::builder().max_tokens(u32::MAX).build().unwrap();
    let b = Budgeted {
        dependency,
        budget: match budget {
            Some(_) => RetryBudget::builder().build().unwrap(),
            None => none,
        },
    };
    for _ in 0..1000 {
        let _ = b.fetch().await;
    }
    f64::from(b.dependency.requests.load(SeqCst)) / 1000.0
}

#[tokio::test(start_paused = true)]
async fn in_a_total_outage_the_default_budget_keeps_amplification_near_one() {
    let default_budget = RetryBudget::builder().build().unwrap();
    let with_budget = outage_amplification(Some(&default_budget)).await;
    let without = outage_amplification(None).await;
    println!(
        "total outage, 1000 calls, max_attempts 3: {with_budget:.2}x with the default budget, {without:.2}x without"
    );
    assert!(with_budget <= 1.1, "{with_budget}");
    assert!((without - 3.0).abs() < f64::EPSILON, "{without}");
}

// ---------------------------------------------------------------- nested deadlines

static INNER_ATTEMPTS: AtomicU32 = AtomicU32::new(0);

#[retryable(
    max_attempts = 100,
    delay = "200ms",
    backoff = "fixed",
    jitter = "none"
)]
async fn inner_without_deadline() -> Result<u32, ApiError> {
    INNER_ATTEMPTS.fetch_add(1, SeqCst);
    Err(ApiError::Unavailable)
}

#[retryable(max_attempts = 2, delay = "10ms", jitter = "none", max_elapsed = "1s")]
async fn outer_with_deadline() -> Result<u32, ApiError> {
    inner_without_deadline().await
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_stops_at_its_callers_deadline() {
    let start = Instant::now();
    assert_eq!(outer_with_deadline().await, Err(ApiError::Unavailable));
    // Inner attempts at 0, 200, 400, 600, 800 ms: a sleep to 1000 ms would reach the outer
    // deadline, so the inner call gives up. The outer sleeps 10 ms (810 < 1000) and tries again;
    // its inner call makes one attempt and cannot sleep to 1010 ms. Without the inheritance, the
    // inner call alone would run 100 attempts (~20 s).
    assert_eq!(INNER_ATTEMPTS.load(SeqCst), 6);
    assert_eq!(start.elapsed(), 810 * MS);
}

#[retryable(max_attempts = 5, delay = "100ms", jitter = "none", timeout = "1s")]
async fn inner_timed() -> Result<u32, ApiError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok(1)
}

#[retryable(max_attempts = 1, max_elapsed = "300ms")]
async fn outer_short() -> Result<u32, ApiError> {
    inner_timed().await
}

#[tokio::test(start_paused = true)]
async fn a_nested_calls_timeout_is_clipped_to_its_callers_deadline() {
    let start = Instant::now();
    assert_eq!(outer_short().await, Err(ApiError::Timeout));
    assert_eq!(start.elapsed(), 300 * MS);
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_inherits_the_deadline_too() {
    let policy = RetryPolicy::builder()
        .max_attempts(100)
        .delay(Duration::from_millis(200))
        .backoff(reattempt::Backoff::Fixed)
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let attempts = AtomicU32::new(0);
    let outer = RetryPolicy::builder()
        .max_attempts(1)
        .max_elapsed(Duration::from_secs(1))
        .build()
        .unwrap();
    let start = Instant::now();
    let out: std::io::Result<u32> = outer
        .retry(|| async {
            policy
                .retry(|| async {
                    attempts.fetch_add(1, SeqCst);
                    Err(std::io::ErrorKind::ConnectionReset.into())
                })
                .await
        })
        .await;
    assert!(out.is_err());
    assert_eq!(attempts.load(SeqCst), 5);
    assert_eq!(start.elapsed(), 800 * MS);
}

// ---------------------------------------------------------------- policy = …

static CONFIGURED: LazyLock<RetryPolicy> = LazyLock::new(|| {
    RetryPolicy::builder()
        .max_attempts(4)
        .delay(Duration::from_millis(250))
        .backoff(reattempt::Backoff::Linear)
        .jitter(Jitter::None)
        .build()
        .unwrap()
});

static CONFIGURED_CALLS: AtomicU32 = AtomicU32::new(0);

#[retryable(policy = CONFIGURED, retry_on = [ApiError::Unavailable])]
async fn with_runtime_policy(fail: bool) -> Result<u32, ApiError> {
    CONFIGURED_CALLS.fetch_add(1, SeqCst);
    if fail {
        Err(ApiError::Unavailable)
    } else {
        Err(ApiError::BadRequest)
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_chosen_at_run_time_drives_the_schedule() {
    let start = Instant::now();
    assert_eq!(with_runtime_policy(true).await, Err(ApiError::Unavailable));
    assert_eq!(CONFIGURED_CALLS.load(SeqCst), 4);
    assert_eq!(start.elapsed(), 1500 * MS); // 250 + 500 + 750
    assert_eq!(with_runtime_policy(false).await, Err(ApiError::BadRequest));
    assert_eq!(CONFIGURED_CALLS.load(SeqCst), 5);
}

// ---------------------------------------------------------------- timeouts the error reports

/// An I/O client whose first attempt times out (its own read timeout: `ErrorKind::TimedOut`).
struct IoClient {
    requests: AtomicU32,
    budget: RetryBudget,
    breaker: CircuitBreaker,
    /// `available()` of the budget, seen by the second attempt.
    seen: AtomicU32,
}

impl IoClient {
    fn new() -> Self {
        IoClient {
            requests: AtomicU32::new(0),
            budget: RetryBudget::builder()
                .max_tokens(100)
                .retry_cost(5)
                .timeout_cost(10)
                .success_deposit(0)
                .build()
                .unwrap(),
            breaker: CircuitBreaker::builder()
                .failure_threshold(1)
                .reset_timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            seen: AtomicU32::new(0),
        }
    }

    fn request(&self, kind: std::io::ErrorKind) -> std::io::Result<u32> {
        if self.requests.fetch_add(1, SeqCst) == 0 {
            Err(kind.into())
        } else {
            self.seen.store(self.budget.available(), SeqCst);
            Ok(1)
        }
    }

    #[retryable(max_attempts = 2, delay = "100ms", jitter = "none", budget = self.budget)]
    async fn read(&self, kind: std::io::ErrorKind) -> std::io::Result<u32> {
        self.request(kind)
    }

    /// Retries only resets: a timeout is returned at once.
    #[retryable(max_attempts = 2, delay = "100ms", circuit_breaker = self.breaker,
                retry_if = |e| matches!(e, BreakerIo::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset))]
    async fn read_no_timeout_retry(&self, kind: std::io::ErrorKind) -> Result<u32, BreakerIo> {
        self.request(kind).map_err(BreakerIo::Io)
    }
}

/// `io::Error` behind a breaker (which needs `From<BreakerOpen>`), still `Transient`.
#[derive(Debug)]
enum BreakerIo {
    Io(std::io::Error),
    Open,
}

impl From<reattempt::BreakerOpen> for BreakerIo {
    fn from(_: reattempt::BreakerOpen) -> Self {
        BreakerIo::Open
    }
}

impl reattempt::Transient for BreakerIo {
    fn is_transient(&self) -> bool {
        matches!(self, BreakerIo::Io(e) if reattempt::transient(e))
    }
    fn is_timeout(&self) -> bool {
        matches!(self, BreakerIo::Io(e) if reattempt::is_timeout(e))
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_an_error_that_is_a_timeout_costs_timeout_cost() {
    let c = IoClient::new();
    assert_eq!(c.read(std::io::ErrorKind::TimedOut).await.unwrap(), 1);
    assert_eq!(
        c.seen.load(SeqCst),
        90,
        "timeout_cost (10) withdrawn, not retry_cost (5)"
    );
    assert_eq!(
        c.budget.available(),
        100,
        "the retry's cost is refunded on success"
    );

    let c = IoClient::new();
    assert_eq!(
        c.read(std::io::ErrorKind::ConnectionReset).await.unwrap(),
        1
    );
    assert_eq!(c.seen.load(SeqCst), 95, "not a timeout: retry_cost");
    assert_eq!(c.budget.available(), 100);
}

#[tokio::test(start_paused = true)]
async fn an_error_that_is_a_timeout_counts_on_the_breaker_even_when_not_retried() {
    let c = IoClient::new();
    let out = c.read_no_timeout_retry(std::io::ErrorKind::TimedOut).await;
    assert!(
        matches!(out, Err(BreakerIo::Io(ref e)) if e.kind() == std::io::ErrorKind::TimedOut),
        "{out:?}"
    );
    assert_eq!(c.requests.load(SeqCst), 1, "not retried");
    assert_eq!(c.breaker.state(), BreakerState::Open);

    // Any other non-retried error means the dependency answered: a success for the breaker.
    let c = IoClient::new();
    let out = c
        .read_no_timeout_retry(std::io::ErrorKind::PermissionDenied)
        .await;
    assert!(out.is_err());
    assert_eq!(c.breaker.state(), BreakerState::Closed);
}

// ------------------------------------------------- a fallback runs under the call's deadline

static FALLBACK_ATTEMPTS: AtomicU32 = AtomicU32::new(0);

static TRIPPED: LazyLock<CircuitBreaker> = LazyLock::new(|| {
    let b = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    b.record(b.try_acquire().unwrap(), false);
    b
});

/// A second service the fallback turns to, retried on its own (no `max_elapsed`).
#[retryable(max_attempts = 10, delay = "1s", backoff = "fixed", jitter = "none")]
async fn fallback_service() -> Result<u32, ApiError> {
    FALLBACK_ATTEMPTS.fetch_add(1, SeqCst);
    Err(ApiError::Unavailable)
}

#[retryable(max_elapsed = "1500ms", circuit_breaker = TRIPPED, recover = via_fallback_service)]
async fn primary_behind_open_breaker() -> Result<u32, ApiError> {
    Ok(1)
}

#[recover]
async fn via_fallback_service(_err: ApiError) -> Result<u32, ApiError> {
    fallback_service().await
}

/// `#[recover]` runs in the call's context, which narrows the inherited deadline to the call's
/// own `max_elapsed` (as for a retrying call nested in an attempt). Before issue 13 the call's
/// clock started in `Call::new`, so this held whatever happened to the first attempt; now it
/// starts at the first attempt, and a call whose first attempt the breaker rejected has no clock
/// and no deadline: the fallback's own retrying call ran 10 attempts over 9 s instead of
/// stopping within the 1.5 s the caller gave.
#[tokio::test(start_paused = true)]
async fn a_fallback_after_a_rejected_first_attempt_keeps_the_callers_deadline() {
    let start = Instant::now();
    assert_eq!(
        primary_behind_open_breaker().await,
        Err(ApiError::Unavailable)
    );
    // Attempts at 0 and 1 s; a sleep to 2 s would end past the 1.5 s deadline.
    assert_eq!(FALLBACK_ATTEMPTS.load(SeqCst), 2);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}
