//! What reattempt guarantees when things go wrong around it: cancellation at every await point,
//! panics inside an attempt, extreme settings, and a breaker hammered from many threads.

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reattempt::{BreakerState, CircuitBreaker, RetryBudget, recover, retryable};
use tokio::time::{Instant, sleep, timeout};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Unavailable,
    CircuitOpen,
}

impl From<reattempt::BreakerOpen> for ApiError {
    fn from(_: reattempt::BreakerOpen) -> Self {
        ApiError::CircuitOpen
    }
}

/// Counts what a call did: attempts started and finished, recoveries started and finished.
#[derive(Default)]
struct Counters {
    attempts: AtomicU32,
    attempts_done: AtomicU32,
    recoveries: AtomicU32,
    recoveries_done: AtomicU32,
}

struct Service {
    counters: Counters,
    work: Duration,
    breaker: CircuitBreaker,
    budget: RetryBudget,
}

impl Service {
    fn new(work: Duration) -> Self {
        Service {
            counters: Counters::default(),
            work,
            breaker: CircuitBreaker::builder()
                .failure_threshold(100)
                .build()
                .unwrap(),
            budget: RetryBudget::builder()
                .max_tokens(10)
                .retry_cost(5)
                .build()
                .unwrap(),
        }
    }

    #[retryable(max_attempts = 5, delay = "1s", backoff = "fixed", jitter = "none",
                circuit_breaker = self.breaker, budget = self.budget, recover = Self::fallback)]
    async fn call(&self) -> Result<u32, ApiError> {
        self.counters.attempts.fetch_add(1, SeqCst);
        sleep(self.work).await;
        self.counters.attempts_done.fetch_add(1, SeqCst);
        Err(ApiError::Unavailable)
    }

    #[recover]
    async fn fallback(&self, err: ApiError) -> Result<u32, ApiError> {
        self.counters.recoveries.fetch_add(1, SeqCst);
        sleep(Duration::from_secs(1)).await;
        self.counters.recoveries_done.fetch_add(1, SeqCst);
        Err(err)
    }

    fn attempts(&self) -> (u32, u32) {
        (
            self.counters.attempts.load(SeqCst),
            self.counters.attempts_done.load(SeqCst),
        )
    }
}

#[tokio::test(start_paused = true)]
async fn dropped_during_an_attempt_no_further_attempt_starts() {
    let s = Service::new(Duration::from_secs(10));
    assert!(timeout(Duration::from_secs(1), s.call()).await.is_err());
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(
        s.attempts(),
        (1, 0),
        "the attempt was dropped and nothing followed"
    );
    assert_eq!(s.counters.recoveries.load(SeqCst), 0);
    // The breaker and the budget are as before, and the next call works normally.
    assert_eq!(s.breaker.state(), BreakerState::Closed);
    assert_eq!(s.budget.available(), 10);
    assert!(reattempt::context().is_none());
}

#[tokio::test(start_paused = true)]
async fn dropped_during_a_sleep_no_further_attempt_starts() {
    let s = Service::new(MS);
    // The first attempt fails at 1 ms; the call sleeps 1 s; drop it half way.
    assert!(timeout(500 * MS, s.call()).await.is_err());
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(s.attempts(), (1, 1));
    assert_eq!(s.counters.recoveries.load(SeqCst), 0);
    assert_eq!(
        s.budget.available(),
        5,
        "the retry was paid for when decided"
    );
    assert_eq!(s.breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn dropped_during_recover_nothing_more_runs() {
    let s = Service::new(MS);
    // Attempts at 0, 1.001, 2.002 s (the budget pays for two retries), then recover sleeps 1 s.
    let start = Instant::now();
    assert!(
        timeout(Duration::from_millis(2500), s.call())
            .await
            .is_err()
    );
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(s.attempts(), (3, 3));
    assert_eq!(s.counters.recoveries.load(SeqCst), 1);
    assert_eq!(s.counters.recoveries_done.load(SeqCst), 0);
    assert_eq!(s.budget.available(), 0);
}

static PANICS: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 5, delay = "10ms", circuit_breaker = BREAKER, budget = BUDGET)]
async fn panics() -> Result<u32, ApiError> {
    PANICS.fetch_add(1, SeqCst);
    panic!("a bug in the body");
}

static BREAKER: std::sync::LazyLock<CircuitBreaker> = std::sync::LazyLock::new(|| {
    CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap()
});
static BUDGET: std::sync::LazyLock<RetryBudget> =
    std::sync::LazyLock::new(|| RetryBudget::builder().build().unwrap());

#[tokio::test(start_paused = true)]
async fn a_panic_propagates_and_is_not_retried() {
    let joined = tokio::spawn(panics()).await;
    assert!(joined.unwrap_err().is_panic());
    assert_eq!(
        PANICS.load(SeqCst),
        1,
        "a panic is a bug, not a transient failure"
    );
    // The breaker did not count the panic, the budget paid nothing, the context is clear.
    assert_eq!(BREAKER.state(), BreakerState::Closed);
    assert_eq!(BUDGET.available(), 500);
    assert!(reattempt::context().is_none());
    // And they keep working.
    let permit = BREAKER.try_acquire().unwrap();
    BREAKER.record(permit, true);
    assert!(BUDGET.try_withdraw(false));
}

#[test]
fn a_panic_in_a_blocking_attempt_leaves_no_context_behind() {
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn blocking_panics() -> Result<u32, ApiError> {
        assert!(reattempt::context().is_some());
        panic!("a bug in the body");
    }
    assert!(std::panic::catch_unwind(blocking_panics).is_err());
    assert!(reattempt::context().is_none());
}

// ---------------------------------------------------------------- extreme settings

#[retryable(
    max_attempts = 67108863,
    delay = "1ns",
    multiplier = 1000000,
    max_delay = "100 years",
    jitter = "full",
    max_elapsed = "1s"
)]
async fn extreme(calls: &AtomicU32) -> Result<u32, ApiError> {
    calls.fetch_add(1, SeqCst);
    Err(ApiError::Unavailable)
}

#[tokio::test(start_paused = true)]
async fn extreme_settings_neither_overflow_nor_hang() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(extreme(&calls).await, Err(ApiError::Unavailable));
    // Delays grow a million-fold per retry: within a few retries one would end past the
    // 1 s deadline, and the call stops there.
    assert!(calls.load(SeqCst) < 10, "{}", calls.load(SeqCst));
    assert!(start.elapsed() < Duration::from_secs(1));
}

// ---------------------------------------------------------------- a breaker under threads

/// Records the breaker's transitions, in the order they happened (events are emitted under the
/// breaker's lock).
#[derive(Clone, Default)]
struct Transitions(Arc<Mutex<Vec<(String, String)>>>);

struct Fields(Option<String>, Option<String>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "from" => self.0 = Some(format!("{value:?}")),
            "to" => self.1 = Some(format!("{value:?}")),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Transitions {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = Fields(None, None);
        event.record(&mut fields);
        if let Fields(Some(from), Some(to)) = fields {
            self.0.lock().unwrap().push((from, to));
        }
    }
}

#[test]
fn eight_threads_times_a_hundred_thousand_calls_lose_no_transition() {
    use tracing_subscriber::layer::SubscriberExt;
    let breaker = CircuitBreaker::builder()
        .failure_threshold(3)
        .reset_timeout(Duration::from_micros(50))
        .half_open_probes(2)
        .build()
        .unwrap();
    let transitions = Transitions::default();
    let admitted = AtomicU32::new(0);
    std::thread::scope(|s| {
        for thread in 0..8_u32 {
            let (breaker, transitions, admitted) = (&breaker, transitions.clone(), &admitted);
            s.spawn(move || {
                let subscriber = tracing_subscriber::registry().with(transitions);
                tracing::subscriber::with_default(subscriber, || {
                    for i in 0..100_000_u32 {
                        if let Ok(permit) = breaker.try_acquire() {
                            admitted.fetch_add(1, SeqCst);
                            // Failures come in bursts, so the breaker trips and recovers often.
                            breaker.record(permit, (i / 7 + thread) % 3 != 0);
                        }
                    }
                });
            });
        }
    });
    let transitions = transitions.0.lock().unwrap();
    assert!(
        transitions.len() > 10,
        "the breaker moved: {}",
        transitions.len()
    );
    assert_eq!(transitions[0].0, "closed");
    for pair in transitions.windows(2) {
        assert_eq!(
            pair[0].1, pair[1].0,
            "a transition was lost between {pair:?}"
        );
    }
    for (from, to) in transitions.iter() {
        let allowed = matches!(
            (from.as_str(), to.as_str()),
            ("closed", "open") | ("open", "half-open") | ("half-open", "closed" | "open")
        );
        assert!(allowed, "{from} -> {to}");
    }
    assert!(admitted.load(SeqCst) > 0);
}
