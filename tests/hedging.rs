//! `#[retryable(hedge_after = …)]`: an `async fn` whose attempts overlap, under tokio's paused
//! clock. The attribute expands through the closure driver; these check the shapes it accepts
//! (`&self`, by-value and borrowed arguments, `recover`, a budget) and that copies share a key.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use reattempt::{HedgeAfter, RetryBudget, RetryPolicy, context, recover, retryable};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
enum PayError {
    Unavailable,
    Timeout,
}

impl From<reattempt::Elapsed> for PayError {
    fn from(_: reattempt::Elapsed) -> Self {
        PayError::Timeout
    }
}

struct Gateway {
    /// How long each attempt takes, by attempt number.
    took: Vec<u64>,
    seen: Mutex<Vec<(u32, String)>>,
    charged: AtomicU32,
}

impl Gateway {
    fn new(took: &[u64]) -> Self {
        Gateway {
            took: took.to_vec(),
            seen: Mutex::new(vec![]),
            charged: AtomicU32::new(0),
        }
    }

    #[retryable(
        max_attempts = 3,
        hedge_after = "50ms",
        idempotent = true,
        timeout = "1s",
        delay = "10ms"
    )]
    async fn charge(&self, order: String, currency: &str) -> Result<String, PayError> {
        let ctx = context().unwrap();
        self.seen
            .lock()
            .unwrap()
            .push((ctx.attempt(), ctx.idempotency_key().to_string()));
        sleep(Duration::from_millis(self.took[ctx.attempt() as usize - 1])).await;
        self.charged.fetch_add(1, Ordering::SeqCst);
        Ok(format!("{order} {currency} by attempt {}", ctx.attempt()))
    }

    #[retryable(max_attempts = 2, hedge_after = "p95", idempotent = true, recover = Self::pending)]
    async fn refund(&self, order: &str) -> Result<String, PayError> {
        let n = context().unwrap().attempt();
        sleep(Duration::from_millis(self.took[n as usize - 1])).await;
        Err(PayError::Unavailable)
    }

    #[recover]
    async fn pending(&self, err: PayError, order: &str) -> Result<String, PayError> {
        Ok(format!("{order} pending after {err:?}"))
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_hedged_and_the_copies_share_the_key() {
    let g = Gateway::new(&[1000, 10, 10]);
    let t0 = Instant::now();
    let out = g.charge("order-1".to_owned(), "EUR").await;
    assert_eq!(out.unwrap(), "order-1 EUR by attempt 2");
    assert_eq!(t0.elapsed(), 60 * MS);
    let seen = g.seen.lock().unwrap().clone();
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(seen[0].1, seen[1].1, "one idempotency key for both copies");
    sleep(Duration::from_secs(2)).await;
    assert_eq!(
        g.charged.load(Ordering::SeqCst),
        1,
        "the slow copy was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fast_call_is_not_hedged() {
    let g = Gateway::new(&[20, 20, 20]);
    assert_eq!(
        g.charge("o".to_owned(), "USD").await.unwrap(),
        "o USD by attempt 1"
    );
    assert_eq!(g.seen.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn recover_receives_the_last_error_of_a_hedged_call() {
    let g = Gateway::new(&[300, 100]);
    assert_eq!(
        g.refund("o-2").await.unwrap(),
        "o-2 pending after Unavailable"
    );
}

static BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| {
    RetryBudget::builder()
        .max_tokens(5)
        .retry_cost(5)
        .build()
        .unwrap()
});

static STARTS: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 3, hedge_after = "20ms", idempotent = true, budget = BUDGET, retry_if = |_| false)]
async fn lookup(id: u32) -> Result<u32, std::io::Error> {
    STARTS.fetch_add(1, Ordering::SeqCst);
    sleep(100 * MS).await;
    Ok(id)
}

#[tokio::test(start_paused = true)]
async fn the_budget_pays_for_the_attributes_hedges() {
    assert_eq!(lookup(1).await.unwrap(), 1);
    assert_eq!(
        STARTS.load(Ordering::SeqCst),
        2,
        "one hedge paid, the next refused"
    );
    assert_eq!(BUDGET.available(), 0);
}

/// Records the key every attempt and the fallback see.
struct Keyed {
    keys: Mutex<Vec<String>>,
}

impl Keyed {
    #[retryable(max_attempts = 2, hedge_after = "10ms", idempotent = true, recover = Self::fallback)]
    async fn fetch(&self) -> Result<String, PayError> {
        let key = context().unwrap().idempotency_key().to_string();
        self.keys.lock().unwrap().push(key);
        sleep(30 * MS).await;
        Err(PayError::Unavailable)
    }

    #[recover]
    async fn fallback(&self, _err: PayError) -> Result<String, PayError> {
        Ok(context().unwrap().idempotency_key().to_string())
    }
}

#[tokio::test(start_paused = true)]
async fn the_fallback_of_a_hedged_call_runs_in_the_calls_context() {
    let k = Keyed {
        keys: Mutex::new(vec![]),
    };
    let fallback_key = k.fetch().await.unwrap();
    let keys = k.keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 2, "the first attempt and its hedge");
    assert_eq!(keys[0], keys[1]);
    assert_eq!(
        fallback_key, keys[0],
        "the fallback sees the call's idempotency key, not a fresh one"
    );
}

/// A run-time policy that hedges after 50 ms.
static HEDGING: LazyLock<RetryPolicy> = LazyLock::new(|| {
    RetryPolicy::builder()
        .max_attempts(3)
        .delay(10 * MS)
        .timeout(Duration::from_secs(1))
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap()
});

impl Gateway {
    // Borrowed arguments only: a `policy` fn with a by-value one keeps the loop (and warns).
    #[retryable(policy = HEDGING)]
    async fn charge_by_policy(&self, order: &str) -> Result<String, PayError> {
        let n = context().unwrap().attempt();
        self.seen.lock().unwrap().push((n, order.to_owned()));
        sleep(Duration::from_millis(self.took[n as usize - 1])).await;
        self.charged.fetch_add(1, Ordering::SeqCst);
        Ok(format!("{order} by attempt {n}"))
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_with_hedge_after_hedges_an_async_fn_that_can_overlap() {
    let g = Gateway::new(&[1000, 10, 10]);
    let t0 = Instant::now();
    let out = g.charge_by_policy("order-7").await;
    assert_eq!(out.unwrap(), "order-7 by attempt 2");
    assert_eq!(t0.elapsed(), 60 * MS);
    sleep(Duration::from_secs(2)).await;
    assert_eq!(g.charged.load(Ordering::SeqCst), 1, "the slow copy dropped");
}

/// A function whose attempts cannot overlap (`&mut self`).
struct Counter {
    n: u32,
}

impl Counter {
    #[retryable(policy = HEDGING)]
    async fn bump(&mut self) -> Result<u32, PayError> {
        self.n += 1;
        sleep(100 * MS).await;
        Ok(self.n)
    }
}

/// The WARN events with target `reattempt` logged while `f` runs.
async fn warnings<F: Future>(f: impl FnOnce() -> F) -> Vec<String> {
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    #[derive(Clone, Default)]
    struct Warnings(Arc<Mutex<Vec<String>>>);
    struct Message<'a>(&'a mut String);
    impl Visit for Message<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            use std::fmt::Write as _;
            let _ = write!(self.0, "{}={value:?} ", field.name());
        }
    }
    impl<S: tracing::Subscriber> Layer<S> for Warnings {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let meta = event.metadata();
            if meta.target() == "reattempt" && *meta.level() == tracing::Level::WARN {
                let mut text = String::new();
                event.record(&mut Message(&mut text));
                self.0.lock().unwrap().push(text);
            }
        }
    }
    let w = Warnings::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(w.clone()));
    f().await;
    w.0.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_policy_with_hedge_after_on_a_fn_that_cannot_overlap_warns_once() {
    let mut c = Counter { n: 0 };
    let logged = warnings(|| async {
        assert_eq!(c.bump().await.unwrap(), 1, "one attempt: not hedged");
        assert_eq!(c.bump().await.unwrap(), 2);
    })
    .await;
    assert_eq!(logged.len(), 1, "one warning per function: {logged:?}");
    assert!(logged[0].contains("hedge_after"), "{logged:?}");
    assert!(logged[0].contains("Counter::bump"), "{logged:?}");
}
