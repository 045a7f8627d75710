//! Long polling and the AWS 2026 hint clamp in every driver, at their edges: a hedged call's
//! pending retry under the clamp, a lingering call dropped, the deadline, `#[recover]`, the
//! attribute's shapes, the reqwest middleware, the config keys, an always-ready body, and which
//! closure-API calls wait (those that keep their outcome) and which say they cannot.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use reattempt::{Bulkhead, HedgeAfter, HintMode, Jitter, Preset, RetryBudget, RetryPolicy};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
struct E {
    n: u32,
    hint: Option<Duration>,
}

impl From<reattempt::Elapsed> for E {
    fn from(_: reattempt::Elapsed) -> Self {
        E { n: 0, hint: None }
    }
}

/// A hedged call under `HintMode::AWS_2026`: copy 1 (0–20 ms) fails with no hint while copy 2
/// (the hedge, 10–30 ms) is in flight, so a retry is decided (due at 20 ms + its delay); then
/// copy 2 fails with `x-amz-retry-after: 15000`. The clamp says the wait is at most tᵢ + 5 s
/// (`max_delay` 20 s does not bound it): copy 3 must start within ~5.2 s, not after 15 s.
async fn hedged_third_start(hint: Duration) -> Duration {
    let policy = Preset::Aws2026
        .policy()
        .jitter(Jitter::None)
        .hedge_after(HedgeAfter::Fixed(10 * MS))
        .idempotent(true)
        .build()
        .unwrap();
    assert_eq!(policy.hint_mode(), HintMode::AWS_2026);
    let t0 = Instant::now();
    let starts = RefCell::new(Vec::new());
    let out = policy
        .retry(|| {
            starts.borrow_mut().push(t0.elapsed());
            let n = u32::try_from(starts.borrow().len()).unwrap();
            async move {
                tokio::time::sleep(20 * MS).await;
                match n {
                    1 => Err(E { n, hint: None }),
                    2 => Err(E {
                        n,
                        hint: Some(hint),
                    }),
                    _ => Ok(n),
                }
            }
        })
        .without_timeout()
        .retry_if(|_: &E| true)
        .retry_after(|e: &E| e.hint)
        .await;
    assert_eq!(out, Ok(3));
    let starts = starts.into_inner();
    assert_eq!(&starts[..2], &[Duration::ZERO, 10 * MS]);
    starts[2]
}

#[tokio::test(start_paused = true)]
async fn a_hedged_calls_pending_retry_clamps_a_hint_below_max_delay() {
    let third = hedged_third_start(Duration::from_secs(15)).await;
    assert!(
        third <= Duration::from_millis(5200),
        "the hint is clamped to tᵢ + 5 s under HintMode::AWS_2026, but copy 3 started at {third:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hedged_calls_pending_retry_clamps_a_hint_above_max_delay() {
    let third = hedged_third_start(Duration::from_secs(25)).await;
    assert!(
        third >= Duration::from_secs(5),
        "a 25 s hint is clamped to tᵢ + 5 s, not ignored; copy 3 started at {third:?}"
    );
}

/// Dropping a long-polling call during its wait: the bulkhead's slot comes back, nothing is paid.
#[tokio::test(start_paused = true)]
async fn dropping_a_lingering_call_frees_its_bulkhead_slot() {
    let policy = Preset::Aws2026
        .policy()
        .jitter(Jitter::None)
        .long_polling(true)
        .build()
        .unwrap();
    let budget = Preset::Aws2026.budget().initial_tokens(0).build().unwrap();
    let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
    let call = policy
        .retry(|| async { Err::<(), _>(E { n: 1, hint: None }) })
        .without_timeout()
        .retry_if(|_: &E| true)
        .bulkhead_full_into(|_| E { n: 0, hint: None })
        .bulkhead(&bulkhead)
        .budget(&budget);
    let r = tokio::time::timeout(10 * MS, call).await;
    assert!(r.is_err(), "still lingering at 10 ms of its 50 ms");
    assert!(bulkhead.try_acquire().is_ok(), "the slot is back");
    assert_eq!(budget.available(), 0);
}

/// Long polling through the closure API and the tower layer with a `Retry-After: 30` (seconds)
/// under the AWS 2026 clamp: both wait tᵢ + 5 s.
#[tokio::test(start_paused = true)]
async fn closure_and_tower_linger_the_same_with_a_retry_after() {
    use std::sync::Arc;
    use tower::{Layer, ServiceExt, service_fn};
    let policy = Preset::Aws2026
        .policy()
        .jitter(Jitter::None)
        .long_polling(true)
        .build()
        .unwrap();
    let response = || {
        let mut r = http::Response::new(String::new());
        *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
        r.headers_mut().insert("retry-after", "30".parse().unwrap());
        r
    };
    let budget = Arc::new(Preset::Aws2026.budget().initial_tokens(0).build().unwrap());
    let svc = service_fn(move |_: http::Request<String>| async move {
        Ok::<_, std::convert::Infallible>(response())
    });
    let client = reattempt::tower::RetryLayer::new(policy.clone())
        .http()
        .without_timeout()
        .budget(budget)
        .layer(svc);
    let t0 = Instant::now();
    let r = client
        .oneshot(http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let tower_wait = t0.elapsed();

    let empty = Preset::Aws2026.budget().initial_tokens(0).build().unwrap();
    let t0 = Instant::now();
    let out = policy
        .retry(|| async { Err::<(), _>(response()) })
        .without_timeout()
        .retry_if(|_: &http::Response<String>| true)
        .retry_after(|r: &http::Response<String>| reattempt::http::server_hint(r.headers()).delay)
        .budget(&empty)
        .long_polling_wait()
        .await;
    assert!(out.is_err());
    assert_eq!(t0.elapsed(), tower_wait);
    assert_eq!(tower_wait, 5050 * MS);
}

/// Long polling with `max_elapsed`: no wait past the deadline, and a wait that fits is waited.
#[tokio::test(start_paused = true)]
async fn long_polling_respects_the_deadline() {
    for (max_elapsed, wait) in [(40 * MS, Duration::ZERO), (60 * MS, 50 * MS)] {
        let policy = Preset::Aws2026
            .policy()
            .jitter(Jitter::None)
            .long_polling(true)
            .max_elapsed(max_elapsed)
            .build()
            .unwrap();
        let empty = Preset::Aws2026.budget().initial_tokens(0).build().unwrap();
        let t0 = Instant::now();
        let out = policy
            .retry(|| async { Err::<(), _>(E { n: 1, hint: None }) })
            .without_timeout()
            .retry_if(|_: &E| true)
            .budget(&empty)
            .long_polling_wait()
            .await;
        assert!(out.is_err());
        assert_eq!(t0.elapsed(), wait, "{max_elapsed:?}");
    }
}

// `#[recover]` after a long-polling wait: runs once, after the wait.
thread_local! {
    static RECOVERED: Cell<u32> = const { Cell::new(0) };
    static AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

static POLLING: RetryPolicy = match Preset::Aws2026
    .policy()
    .jitter(Jitter::None)
    .long_polling(true)
    .build()
{
    Ok(p) => p,
    Err(_) => panic!(),
};
static EMPTY: std::sync::LazyLock<RetryBudget> =
    std::sync::LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());

#[reattempt::recover]
async fn fallback(_e: E) -> Result<u32, E> {
    RECOVERED.with(|c| c.set(c.get() + 1));
    AT.with(|a| a.set(Some(Instant::now())));
    Ok(7)
}

#[reattempt::retryable(policy = POLLING, budget = *EMPTY, retry_if = |_| true, recover = fallback)]
async fn polled() -> Result<u32, E> {
    Err(E { n: 1, hint: None })
}

#[tokio::test(start_paused = true)]
async fn recover_runs_once_after_the_wait() {
    let t0 = Instant::now();
    assert_eq!(polled().await, Ok(7));
    assert_eq!(RECOVERED.with(Cell::get), 1);
    assert_eq!(AT.with(Cell::get).unwrap() - t0, 50 * MS);
}

// Shapes users write, each with a run-time `policy` and a `budget` (the keys that switch on the
// long-polling stop arm): every one must compile and wait the refused retry's backoff.
mod shapes {
    use super::*;
    use std::sync::Arc;

    static EMPTY_S: std::sync::LazyLock<RetryBudget> =
        std::sync::LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());

    pub struct Client {
        pub calls: u32,
    }

    impl Client {
        #[reattempt::retryable(policy = POLLING, budget = *EMPTY_S, retry_if = |_| true)]
        pub async fn by_mut_self(&mut self) -> Result<u32, E> {
            self.calls += 1;
            Err(E {
                n: self.calls,
                hint: None,
            })
        }

        #[reattempt::retryable(policy = POLLING, budget = *EMPTY_S, retry_if = |_| true)]
        pub async fn by_arc(self: Arc<Self>, key: String) -> Result<u32, E> {
            Err(E {
                n: u32::try_from(key.len()).unwrap(),
                hint: None,
            })
        }

        #[reattempt::retryable(policy = POLLING, budget = *EMPTY_S, retry_if = |_| true)]
        pub fn blocking_mut(&mut self) -> Result<u32, E> {
            self.calls += 1;
            Err(E {
                n: self.calls,
                hint: None,
            })
        }
    }

    #[reattempt::retryable(policy = POLLING, budget = *EMPTY_S, retry_if = |_| true)]
    pub async fn lends(buf: &mut Vec<u8>) -> Result<u32, E> {
        buf.push(1);
        Err(E {
            n: u32::try_from(buf.len()).unwrap(),
            hint: None,
        })
    }

    #[reattempt::retryable(policy = POLLING, budget = *EMPTY_S, retry_if = |_| true)]
    pub async fn generic<T>(t: T) -> Result<u32, E>
    where
        T: Clone + Send + std::fmt::Debug,
    {
        let _ = t.clone();
        Err(E { n: 1, hint: None })
    }

    #[reattempt::retryable(policy = POLLING, budget = *EMPTY_S, retry_if = |_| true)]
    pub async fn impl_arg(it: impl AsRef<str> + Clone) -> Result<u32, E> {
        Err(E {
            n: u32::try_from(it.as_ref().len()).unwrap(),
            hint: None,
        })
    }
}

#[tokio::test(start_paused = true)]
async fn every_shape_lingers() {
    use std::sync::Arc;
    let mut c = shapes::Client { calls: 0 };
    let t0 = Instant::now();
    assert!(c.by_mut_self().await.is_err());
    assert_eq!(t0.elapsed(), 50 * MS, "&mut self");
    let t0 = Instant::now();
    assert!(
        Arc::new(shapes::Client { calls: 0 })
            .by_arc("k".into())
            .await
            .is_err()
    );
    assert_eq!(t0.elapsed(), 50 * MS, "Arc<Self>");
    let t0 = Instant::now();
    let mut buf = Vec::new();
    assert!(shapes::lends(&mut buf).await.is_err());
    assert_eq!(buf.len(), 1);
    assert_eq!(t0.elapsed(), 50 * MS, "lending");
    let t0 = Instant::now();
    assert!(shapes::generic(5u8).await.is_err());
    assert_eq!(t0.elapsed(), 50 * MS, "generic");
    let t0 = Instant::now();
    assert!(shapes::impl_arg("ab").await.is_err());
    assert_eq!(t0.elapsed(), 50 * MS, "impl arg");
}

/// The reqwest middleware, over loopback, with the same long-polling policy and an empty budget:
/// the waits the closure API and the tower layer wait (2 s for a hinted 503, 1 s for a 429, none
/// for a 404).
#[tokio::test(start_paused = true)]
async fn the_reqwest_middleware_lingers_as_the_others_do() {
    use reattempt::reqwest_middleware::RetryMiddleware;
    use std::sync::Arc;
    for (status, hint, wait) in [
        (503u16, Some("2000"), 2000 * MS),
        (503, None, 50 * MS),
        (429, None, 1000 * MS),
        (404, None, Duration::ZERO),
    ] {
        let app = axum::Router::new().route(
            "/",
            axum::routing::get(move || async move {
                let mut r = http::Response::new(String::new());
                *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
                if let Some(h) = hint {
                    r.headers_mut()
                        .insert("x-amz-retry-after", h.parse().unwrap());
                }
                r
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let budget = Arc::new(Preset::Aws2026.budget().initial_tokens(0).build().unwrap());
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(RetryMiddleware::new(POLLING.clone()).budget(budget))
            .build();
        let t0 = Instant::now();
        let r = client.get(format!("http://{addr}/")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status);
        assert_eq!(t0.elapsed(), wait, "{status} {hint:?}");
    }
}

/// The new keys in the sections they belong to, and refused (naming the key) in the others.
#[test]
fn config_keys_in_and_out_of_their_sections() {
    use reattempt::CircuitBreaker;
    let p: RetryPolicy = toml::from_str(
        "preset = \"aws-2026-dynamodb\"\nlong_polling = true\nhint_mode = \"clamp 250ms\"",
    )
    .unwrap();
    assert!(p.long_polling());
    assert_eq!(p.hint_mode(), HintMode::Clamp { above: 250 * MS });
    let b: RetryBudget = toml::from_str("preset = \"aws-2026\"\ninitial_tokens = 14").unwrap();
    assert_eq!(b.available(), 14);
    for (what, err) in [
        (
            "budget long_polling",
            toml::from_str::<RetryBudget>("long_polling = true")
                .map(|_| ())
                .unwrap_err()
                .to_string(),
        ),
        (
            "budget hint_mode",
            toml::from_str::<RetryBudget>("hint_mode = \"floor\"")
                .map(|_| ())
                .unwrap_err()
                .to_string(),
        ),
        (
            "policy initial_tokens",
            toml::from_str::<RetryPolicy>("initial_tokens = 0")
                .map(|_| ())
                .unwrap_err()
                .to_string(),
        ),
        (
            "breaker hint_mode",
            toml::from_str::<CircuitBreaker>("hint_mode = \"floor\"")
                .map(|_| ())
                .unwrap_err()
                .to_string(),
        ),
        (
            "breaker initial_tokens",
            toml::from_str::<CircuitBreaker>("initial_tokens = 1")
                .map(|_| ())
                .unwrap_err()
                .to_string(),
        ),
    ] {
        let key = what.split(' ').nth(1).unwrap();
        assert!(err.contains(&format!("`{key}`")), "{what}: {err}");
    }
    for bad in ["clamp", "clamp 5", "clamp -5s", "Clamp 5s", "clamp 1M"] {
        let err = toml::from_str::<RetryPolicy>(&format!("hint_mode = {bad:?}"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("hint_mode"), "{bad}: {err}");
    }
    let err = toml::from_str::<RetryPolicy>("hint_mode = 5")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("hint_mode") || err.contains("hint mode"),
        "{err}"
    );
    let err = toml::from_str::<RetryBudget>("max_tokens = 10\ninitial_tokens = -1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`initial_tokens`"), "{err}");
}

/// An always-ready body (it spends tokio's cooperative budget): 150 paid retries, then the
/// budget refuses and the call lingers; it must return, on a multi-thread runtime too.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_always_ready_body_still_lingers_and_returns() {
    let policy = RetryPolicy::builder()
        .max_attempts(1000)
        .delay(Duration::from_micros(10))
        .max_delay(Duration::from_micros(10))
        .jitter(Jitter::None)
        .long_polling(true)
        .build()
        .unwrap();
    let budget = RetryBudget::builder().max_tokens(5 * 150).build().unwrap();
    let calls = Cell::new(0u32);
    let call = policy
        .retry(|| {
            calls.set(calls.get() + 1);
            std::future::ready(Err::<(), _>(E { n: 1, hint: None }))
        })
        .without_timeout()
        .retry_if(|_: &E| true)
        .budget(&budget)
        .long_polling_wait();
    let out = tokio::time::timeout(Duration::from_secs(5), call).await;
    assert!(matches!(out, Ok(Err(_))), "{out:?}");
    assert_eq!(calls.get(), 151);
}

// A `&mut self` method returning a borrow of it (issue 25's shape), with `policy` and `budget`.
mod borrowed {
    use super::*;
    static EMPTY_B: std::sync::LazyLock<RetryBudget> =
        std::sync::LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());

    #[derive(Debug, Default)]
    pub struct Pool {
        pub conn: u32,
        pub attempts: u32,
    }

    impl Pool {
        #[reattempt::retryable(policy = POLLING, budget = *EMPTY_B, retry_if = |_| true)]
        pub async fn conn(&mut self) -> Result<&mut u32, E> {
            self.attempts += 1;
            if self.attempts < 2 {
                return Err(E { n: 1, hint: None });
            }
            Ok(&mut self.conn)
        }

        #[reattempt::retryable(policy = POLLING, budget = *EMPTY_B, retry_if = |_| true)]
        pub fn conn_blocking(&mut self) -> Result<&u32, E> {
            self.attempts += 1;
            if self.attempts < 2 {
                return Err(E { n: 1, hint: None });
            }
            Ok(&self.conn)
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_borrowed_return_lingers() {
    let mut pool = borrowed::Pool::default();
    let t0 = Instant::now();
    assert!(pool.conn().await.is_err());
    assert_eq!(t0.elapsed(), 50 * MS);
}

// `#[async_trait]` with `policy` and `budget`, a `Send` error: compiles and lingers.
#[async_trait::async_trait]
trait Poll {
    async fn poll_once(&self, queue: String) -> Result<u32, E>;
}
struct Poller;
static EMPTY_T: std::sync::LazyLock<RetryBudget> =
    std::sync::LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());
#[async_trait::async_trait]
impl Poll for Poller {
    #[reattempt::retryable(policy = POLLING, budget = *EMPTY_T, retry_if = |_| true)]
    async fn poll_once(&self, queue: String) -> Result<u32, E> {
        Err(E {
            n: u32::try_from(queue.len()).unwrap(),
            hint: None,
        })
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_lingers() {
    let t0 = Instant::now();
    assert!(Poller.poll_once("q".into()).await.is_err());
    assert_eq!(t0.elapsed(), 50 * MS);
}

/// A POST whose 502/503/504 is not repeated under HTTP's safety rule: no long-polling wait.
#[tokio::test(start_paused = true)]
async fn tower_post_unknown_outcome_does_not_linger() {
    use std::sync::Arc;
    use tower::{Layer, ServiceExt, service_fn};
    for (status, wait) in [(502u16, None), (504, None), (503, None)] {
        let budget = Arc::new(Preset::Aws2026.budget().initial_tokens(0).build().unwrap());
        let svc = service_fn(move |_: http::Request<String>| async move {
            let mut r = http::Response::new(String::new());
            *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
            Ok::<_, std::convert::Infallible>(r)
        });
        let client = reattempt::tower::RetryLayer::new(POLLING.clone())
            .http()
            .without_timeout()
            .budget(budget)
            .layer(svc);
        let mut req = http::Request::new(String::new());
        *req.method_mut() = http::Method::POST;
        let t0 = Instant::now();
        let r = client.oneshot(req).await.unwrap();
        assert_eq!(r.status(), status);
        if let Some(w) = wait {
            assert_eq!(t0.elapsed(), w, "{status}");
        } else {
            assert_eq!(t0.elapsed(), Duration::ZERO, "{status}");
        }
    }
}

/// The WARN events with target `reattempt` logged while `f` runs.
async fn warnings<F: std::future::Future>(f: impl FnOnce() -> F) -> Vec<String> {
    use std::sync::{Arc, Mutex};
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

/// A closure-API call with only a budget keeps no outcome (its future stays `Send` whatever
/// `E` is), so under a long-polling policy it returns at once, and one WARN event names the
/// opt-in; with `long_polling_wait`, or a breaker (which keeps outcomes anyway), it waits.
#[tokio::test(start_paused = true)]
async fn a_closure_call_waits_only_where_it_keeps_its_outcome() {
    let empty = Preset::Aws2026.budget().initial_tokens(0).build().unwrap();
    let breaker = reattempt::CircuitBreaker::builder().build().unwrap();
    let fail = || async { Err::<(), _>(E { n: 1, hint: None }) };
    let mut waits = Vec::new();
    let logged = warnings(|| async {
        let t0 = Instant::now();
        let out = POLLING
            .retry(fail)
            .without_timeout()
            .retry_if(|_: &E| true)
            .budget(&empty)
            .await;
        assert_eq!(out.unwrap_err().n, 1);
        waits.push(t0.elapsed());
        let t0 = Instant::now();
        let out = POLLING
            .retry(fail)
            .without_timeout()
            .retry_if(|_: &E| true)
            .budget(&empty)
            .long_polling_wait()
            .await;
        assert_eq!(out.unwrap_err().n, 1);
        waits.push(t0.elapsed());
        let t0 = Instant::now();
        let out = POLLING
            .retry(fail)
            .without_timeout()
            .retry_if(|_: &E| true)
            .breaker_open_into(|_| E { n: 0, hint: None })
            .circuit_breaker(&breaker)
            .budget(&empty)
            .await;
        assert_eq!(out.unwrap_err().n, 1);
        waits.push(t0.elapsed());
    })
    .await;
    assert_eq!(waits, [Duration::ZERO, 50 * MS, 50 * MS]);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].contains("long_polling_wait"), "{logged:?}");
}
