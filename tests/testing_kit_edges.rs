//! The testing kit's edges, each case from a hostile review: a trace passes the program's own
//! events on; fault injection draws the same faults per call however the calls interleave on
//! threads, counts no zero latency, cuts injected latency at the timeout in every driver; the
//! test clock on a `spawn_blocking` thread; traces of joined calls kept apart.
use std::time::Duration;

use reattempt::testing::{FaultInjection, InjectedFault, Script, trace, with_test_clock};
use reattempt::{HedgeAfter, Jitter, RetryPolicy, retryable};

fn seed_where(rate: f64, latency_rate: f64, want: &[Option<InjectedFault>]) -> u64 {
    (0..100_000u64)
        .find(|&s| {
            let mut b = FaultInjection::builder().rate(rate).seed(s);
            if latency_rate > 0.0 {
                b = b.latency(Duration::from_secs(1)).latency_rate(latency_rate);
            }
            let f = b.build().unwrap();
            // Attempt `a` (1-based) of a policy's first call draws at index `a`.
            want.iter()
                .enumerate()
                .all(|(i, w)| f.fault_at(i as u64 + 1) == *w)
        })
        .expect("a seed")
}

fn faulty(rate: f64, latency: Duration, latency_rate: f64, seed: u64) -> FaultInjection {
    let mut b = FaultInjection::builder()
        .rate(rate)
        .seed(seed)
        .latency(latency);
    if latency_rate > 0.0 {
        b = b.latency_rate(latency_rate);
    }
    b.build().unwrap()
}

fn injected_events(t: &reattempt::testing::Trace) -> Vec<(String, String)> {
    t.events()
        .into_iter()
        .filter(|e| e.field("injected").is_some())
        .map(|e| {
            (
                e.field("attempt").unwrap_or("").to_owned(),
                e.field("kind").unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Module doc: "A copy dropped because another answered first is counted with the fault drawn
/// for it, if any (its attempt was begun)."
#[tokio::test(start_paused = true)]
async fn hedged_copy_dropped_mid_latency_is_counted() {
    let seed = seed_where(0.0, 0.5, &[Some(InjectedFault::Latency), None]);
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(100)))
        .inject_faults(faulty(0.0, Duration::from_secs(10), 0.5, seed))
        .build()
        .unwrap();
    let t0 = tokio::time::Instant::now();
    let (out, t) =
        trace(policy.retry(|| async {
            Ok::<u32, std::io::Error>(reattempt::context().unwrap().attempt())
        }))
        .await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(t0.elapsed(), Duration::from_millis(100));
    assert_eq!(policy.faults_drawn(), 2);
    assert_eq!(
        injected_events(&t),
        [("1".to_owned(), "latency".to_owned())],
        "{t:?}"
    );
}

async fn elapsed_of<F: std::future::IntoFuture<Output = std::io::Result<u32>>>(
    f: F,
) -> (Duration, String) {
    let t0 = tokio::time::Instant::now();
    let out = f.await;
    (t0.elapsed(), format!("{out:?}"))
}

fn me_policy(hedge: bool, inject: bool) -> RetryPolicy {
    let mut b = RetryPolicy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .delay(Duration::from_millis(1))
        .max_elapsed(Duration::from_secs(1));
    if hedge {
        b = b
            .idempotent(true)
            .hedge_after(HedgeAfter::Fixed(Duration::from_secs(3600)));
    }
    if inject {
        b = b.inject_faults(faulty(0.0, Duration::from_secs(10), 1.0, 0));
    }
    b.build().unwrap()
}

static ME_INJECT: RetryPolicy = {
    let Ok(f) = FaultInjection::builder()
        .latency(Duration::from_secs(10))
        .latency_rate(1.0)
        .build()
    else {
        panic!()
    };
    match RetryPolicy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .delay(Duration::from_millis(1))
        .max_elapsed(Duration::from_secs(1))
        .inject_faults(f)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    }
};

#[retryable(policy = &ME_INJECT)]
async fn attr_ok() -> Result<u32, std::io::Error> {
    Ok(1)
}

/// Drivers must agree: injected latency (10 s) beyond a call's `max_elapsed` (1 s), no per-attempt
/// timeout. Baseline: a body that takes 10 s itself.
#[tokio::test(start_paused = true)]
async fn injected_latency_past_max_elapsed_drivers_agree() {
    let slow = || async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<u32, std::io::Error>(1)
    };
    let base_plain = elapsed_of(me_policy(false, false).retry(slow)).await;
    let base_hedged = elapsed_of(me_policy(true, false).retry(slow)).await;
    let inj_plain =
        elapsed_of(me_policy(false, true).retry(|| async { Ok::<u32, std::io::Error>(1) })).await;
    let inj_hedged =
        elapsed_of(me_policy(true, true).retry(|| async { Ok::<u32, std::io::Error>(1) })).await;
    let inj_attr = elapsed_of(attr_ok()).await;
    let all = [
        &base_plain,
        &base_hedged,
        &inj_plain,
        &inj_hedged,
        &inj_attr,
    ];
    eprintln!("{all:#?}");
    assert!(all.iter().all(|x| *x == all[0]), "{all:#?}");
}

/// `with_test_clock`: "the engine reads the clock from the same paused tokio clock": `max_elapsed`
/// of a blocking fn goes by it.
#[retryable(
    max_attempts = 100,
    delay = "5s",
    backoff = "fixed",
    jitter = "none",
    max_elapsed = "12s"
)]
fn blocking_max_elapsed(s: &Script<u32, std::io::Error>) -> Result<u32, std::io::Error> {
    s.next_blocking()
}

#[test]
fn blocking_max_elapsed_on_the_test_clock() {
    let s = Script::new().then_always_err_with(|| std::io::Error::other("down"));
    let wall = std::time::Instant::now();
    let out = with_test_clock(|| blocking_max_elapsed(&s));
    assert!(out.is_err());
    assert!(wall.elapsed() < Duration::from_secs(5));
    assert_eq!(s.calls(), 3, "{:?}", s.asked());
}

/// The program's own events inside a traced future: the doc says the program's subscriber sees
/// none of reattempt's; does it still see its own?
#[test]
fn trace_keeps_the_programs_own_events() {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_event(&self, e: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            self.0
                .lock()
                .unwrap()
                .push(e.metadata().target().to_owned());
        }
    }
    let seen = Seen::default();
    let sub = tracing_subscriber::registry().with(seen.clone());
    tracing::subscriber::with_default(sub, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let ((), _t) = trace(async {
                tracing::warn!(target: "app", "the app's own warning");
            })
            .await;
        });
    });
    assert_eq!(*seen.0.lock().unwrap(), ["app"]);
}

/// The testing chapter's promise: a trace hides nothing. The program's own subscriber sees the
/// runtime's events of a traced call too (the retry and the give-up), as many as the trace does.
#[test]
fn trace_passes_the_runtimes_events_on_to_the_programs_subscriber() {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_event(&self, e: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            self.0
                .lock()
                .unwrap()
                .push(e.metadata().target().to_owned());
        }
    }
    let seen = Seen::default();
    let sub = tracing_subscriber::registry().with(seen.clone());
    let traced = tracing::subscriber::with_default(sub, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
            let (out, trace) = trace(
                policy
                    .retry(|| async { Err::<(), _>(std::io::Error::other("down")) })
                    .retry_if(|_: &std::io::Error| true),
            )
            .await;
            assert!(out.is_err());
            trace.events().len()
        })
    });
    let seen = seen.0.lock().unwrap();
    let runtime_events = seen.iter().filter(|t| t.starts_with("reattempt")).count();
    assert!(traced >= 2, "a retry and a give-up: {traced}");
    assert_eq!(runtime_events, traced, "the program saw {seen:?}");
}

fn lt_policy(hedge: bool, latency: Duration) -> RetryPolicy {
    let mut b = RetryPolicy::builder()
        .max_attempts(1)
        .jitter(Jitter::None)
        .timeout(Duration::from_secs(1))
        .inject_faults(faulty(0.0, latency, 1.0, 0));
    if hedge {
        b = b
            .idempotent(true)
            .hedge_after(HedgeAfter::Fixed(Duration::from_millis(900)));
    }
    b.build().unwrap()
}

static LT_ATTR: RetryPolicy = {
    let Ok(f) = FaultInjection::builder()
        .latency(Duration::from_millis(600))
        .latency_rate(1.0)
        .build()
    else {
        panic!()
    };
    match RetryPolicy::builder()
        .max_attempts(1)
        .jitter(Jitter::None)
        .timeout(Duration::from_secs(1))
        .inject_faults(f)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    }
};

#[retryable(policy = &LT_ATTR)]
async fn attr_slow() -> Result<u32, std::io::Error> {
    tokio::time::sleep(Duration::from_millis(600)).await;
    Ok(1)
}

/// "the latency counts against the attempt's timeout": 600 ms injected + a 600 ms body under a
/// 1 s timeout times out at 1 s, in every driver.
#[tokio::test(start_paused = true)]
async fn injected_latency_counts_against_the_timeout_in_every_driver() {
    let slow = || async {
        tokio::time::sleep(Duration::from_millis(600)).await;
        Ok::<u32, std::io::Error>(1)
    };
    let ms600 = Duration::from_millis(600);
    let plain = elapsed_of(lt_policy(false, ms600).retry(slow)).await;
    let hedged = elapsed_of(lt_policy(true, ms600).retry(slow)).await;
    let attr = elapsed_of(attr_slow()).await;
    let all = [&plain, &hedged, &attr];
    eprintln!("{all:#?}");
    assert!(
        all.iter()
            .all(|x| x.0 == Duration::from_secs(1) && x.1.contains("TimedOut")),
        "{all:#?}"
    );
    // latency == timeout, latency > timeout, Duration::MAX: cut at the limit, unpolled.
    for l in [
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::MAX,
    ] {
        let plain =
            elapsed_of(lt_policy(false, l).retry(|| async { Ok::<u32, std::io::Error>(1) })).await;
        let hedged =
            elapsed_of(lt_policy(true, l).retry(|| async { Ok::<u32, std::io::Error>(1) })).await;
        assert_eq!(plain, hedged, "{l:?}");
        assert_eq!(plain.0, Duration::from_secs(1), "{l:?} {plain:?}");
    }
}

/// `Script::asked` attempt numbers in a hedged call: one per copy, each its own number.
#[tokio::test(start_paused = true)]
async fn asked_attempts_in_a_hedged_call() {
    let s: Script<u32, std::io::Error> = Script::new().hang().ok(2);
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(50)))
        .build()
        .unwrap();
    let out = policy
        .retry(|| {
            let s = s.clone();
            async move { s.next().await }
        })
        .await;
    assert_eq!(out.unwrap(), 2);
    let a: Vec<_> = s.asked().iter().map(|a| a.attempt).collect();
    assert_eq!(a, [Some(1), Some(2)]);
    let k: Vec<_> = s.asked().iter().map(|a| a.idempotency_key).collect();
    assert_eq!(k[0], k[1]);
}

/// Judged-by: "a seeded injection at rate 0.1 over 10,000 calls injects 1,000 ± 100 faults and
/// the same sequence on a rerun"; module doc: "the same on every run (whichever thread made
/// which attempt)". 10,000 calls from a multi-thread runtime, five reruns (rewound).
#[test]
fn reruns_on_a_multi_thread_runtime_inject_the_same_faults() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let policy = Arc::new(
        RetryPolicy::builder()
            .max_attempts(2)
            .delay(Duration::from_micros(1))
            .jitter(Jitter::None)
            .inject_faults(FaultInjection::builder().rate(0.1).seed(7).build().unwrap())
            .build()
            .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let mut runs = Vec::new();
    for _ in 0..5 {
        policy.rewind_faults();
        let ran = Arc::new(AtomicU64::new(0));
        let failed_calls: Vec<usize> = rt.block_on(async {
            let hs: Vec<_> = (0..10_000)
                .map(|_| {
                    let (p, ran) = (policy.clone(), ran.clone());
                    tokio::spawn(async move {
                        p.retry(|| {
                            ran.fetch_add(1, Ordering::Relaxed);
                            async { Ok::<(), std::io::Error>(()) }
                        })
                        .await
                        .is_err()
                    })
                })
                .collect();
            let mut failed = Vec::new();
            for (i, h) in hs.into_iter().enumerate() {
                if h.await.unwrap() {
                    failed.push(i);
                }
            }
            failed
        });
        let injected = policy.faults_drawn() - ran.load(Ordering::Relaxed);
        runs.push((injected, failed_calls));
    }
    let counts: Vec<u64> = runs.iter().map(|r| r.0).collect();
    eprintln!(
        "injected per run: {counts:?}; failed calls per run: {:?}",
        runs.iter().map(|r| r.1.len()).collect::<Vec<_>>()
    );
    // Each call's faults depend on its number alone: the counts are the same however the calls
    // interleave (which spawned task gets which number follows the scheduling).
    assert!(
        runs.iter().all(|r| r.0 == runs[0].0),
        "counts differ: {counts:?}"
    );
    assert!(
        runs.iter().all(|r| r.1.len() == runs[0].1.len()),
        "a different number of calls failed on a rerun"
    );
}

#[retryable(max_attempts = 3, delay = "5s", backoff = "fixed", jitter = "none")]
fn read_cfg(s: &Script<u32, std::io::Error>) -> Result<u32, std::io::Error> {
    s.next_blocking()
}

/// A blocking fn under test from an async test: on a `spawn_blocking` thread (not a runtime
/// worker), as the retrying-blocking-fn warning itself advises.
#[tokio::test]
async fn with_test_clock_on_a_spawn_blocking_thread() {
    let out = tokio::task::spawn_blocking(|| {
        let s = Script::new().err(std::io::Error::other("x")).ok(3);
        let wall = std::time::Instant::now();
        let out = with_test_clock(|| read_cfg(&s));
        (out.unwrap(), wall.elapsed() < Duration::from_secs(2))
    })
    .await;
    assert_eq!(out.unwrap(), (3, true));
}

static ALL_ERR: RetryPolicy = {
    let Ok(f) = FaultInjection::builder()
        .rate(1.0)
        .latency(Duration::from_millis(5))
        .build()
    else {
        panic!()
    };
    match RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_millis(1))
        .jitter(Jitter::None)
        // An injected error is judged as the timeout it rehearses: repeated on an idempotent
        // call only.
        .idempotent(true)
        .inject_faults(f)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    }
};
static ALL_ERR_B: RetryPolicy = {
    let Ok(f) = FaultInjection::builder()
        .rate(1.0)
        .latency(Duration::from_millis(5))
        .build()
    else {
        panic!()
    };
    match RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_millis(1))
        .jitter(Jitter::None)
        // An injected error is judged as the timeout it rehearses: repeated on an idempotent
        // call only.
        .idempotent(true)
        .inject_faults(f)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    }
};

struct Lender {
    v: u32,
}
impl Lender {
    #[retryable(policy = &ALL_ERR)]
    async fn get(&mut self) -> Result<&mut u32, std::io::Error> {
        Ok(&mut self.v)
    }
}

#[retryable(policy = &ALL_ERR_B)]
fn blocking_get() -> Result<u32, std::io::Error> {
    Err(std::io::Error::other("x"))
}

/// Every driver counts each injected fault once, with its attempt number.
#[tokio::test(start_paused = true)]
async fn injected_events_of_a_lending_method() {
    let mut l = Lender { v: 1 };
    let (out, t) = trace(l.get()).await;
    assert!(out.is_err());
    assert_eq!(
        injected_events(&t),
        [("1".into(), "error".into()), ("2".into(), "error".into())],
        "{t:?}"
    );
}

#[test]
fn injected_events_of_a_blocking_fn() {
    let (out, t) = reattempt::testing::trace_blocking(|| with_test_clock(blocking_get));
    assert!(out.is_err());
    assert_eq!(
        injected_events(&t),
        [
            ("1".into(), "latency".into()),
            ("2".into(), "latency".into())
        ],
        "{t:?}"
    );
}

static MAX_LAT: RetryPolicy = {
    let Ok(f) = FaultInjection::builder()
        .latency(Duration::MAX)
        .latency_rate(1.0)
        .build()
    else {
        panic!()
    };
    match RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_secs(1))
        .jitter(Jitter::None)
        .max_elapsed(Duration::from_secs(3600))
        .inject_faults(f)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    }
};

#[retryable(policy = &MAX_LAT)]
fn blocking_max_latency(s: &Script<u32, std::io::Error>) -> Result<u32, std::io::Error> {
    s.next_blocking()
}

/// `Duration::MAX` injected latency (a config's "forever") in a blocking fn on the test clock.
#[test]
fn blocking_duration_max_latency_on_the_test_clock() {
    let s = Script::new().then_always_err_with(|| std::io::Error::other("x"));
    let out = with_test_clock(|| blocking_max_latency(&s));
    assert!(out.is_err());
    // max_elapsed = 1 h: the first attempt ends past it, so no retry.
    assert_eq!(s.calls(), 1, "{:?}", s.asked());
}

/// Two traced calls joined in one task: each trace has its own call's events only.
#[tokio::test(start_paused = true)]
async fn joined_traces_keep_their_own_events() {
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .jitter(Jitter::None)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(5)))
        .build()
        .unwrap();
    let a: Script<u32, std::io::Error> = Script::new().hang().ok(1);
    let b: Script<u32, std::io::Error> = Script::new().err(std::io::Error::other("b")).ok(2);
    let ((ra, ta), (rb, tb)) = tokio::join!(
        trace(policy.retry(|| {
            let a = a.clone();
            async move { a.next().await }
        })),
        trace(policy.retry(|| {
            let b = b.clone();
            async move { b.next().await }
        })),
    );
    assert_eq!((ra.unwrap(), rb.unwrap()), (1, 2));
    assert_eq!(ta.hedges(), [2], "{ta:?}");
    assert!(ta.retries().is_empty(), "{ta:?}");
    assert_eq!(tb.retries().len(), 1, "{tb:?}");
    assert!(tb.hedges().is_empty(), "{tb:?}");
}

/// A zero `latency` (config `latency = "0s"`) with `latency_rate` 1: nothing is added. The
/// blocking driver counts no fault then ("counted as one if there is a latency to add, else not
/// at all"); does the async driver agree?
#[tokio::test(start_paused = true)]
async fn zero_latency_faults_are_not_counted_as_injected_latency() {
    let f = FaultInjection::builder()
        .latency(Duration::ZERO)
        .latency_rate(1.0)
        .build()
        .unwrap();
    let policy = RetryPolicy::builder()
        .max_attempts(1)
        .inject_faults(f)
        .build()
        .unwrap();
    let (out, t) = trace(policy.retry(|| async { Ok::<u32, std::io::Error>(1) })).await;
    assert_eq!(out.unwrap(), 1);
    assert_eq!(injected_events(&t), [], "{t:?}");
}

static ZERO_LAT: RetryPolicy = {
    let Ok(f) = FaultInjection::builder()
        .latency(Duration::ZERO)
        .latency_rate(1.0)
        .build()
    else {
        panic!()
    };
    match RetryPolicy::builder()
        .max_attempts(1)
        .inject_faults(f)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    }
};
#[retryable(policy = &ZERO_LAT)]
fn blocking_zero() -> Result<u32, std::io::Error> {
    Ok(1)
}
#[retryable(policy = &ZERO_LAT)]
async fn async_zero() -> Result<u32, std::io::Error> {
    Ok(1)
}

/// The same zero-latency fault through the attribute: blocking fn vs async fn must agree.
#[test]
fn zero_latency_fault_blocking_and_async_attribute_agree() {
    let (_, tb) = reattempt::testing::trace_blocking(blocking_zero);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let (_, ta) = rt.block_on(trace(async_zero()));
    assert_eq!(
        injected_events(&tb),
        injected_events(&ta),
        "blocking {tb:?} / async {ta:?}"
    );
}
