//! Fault injection as a policy setting (feature `testing`), end to end: through
//! `#[retryable(policy = …)]` and the closure API, on tokio's paused clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reattempt::testing::FaultInjection;
use reattempt::{Jitter, RetryPolicy, retryable};

const fn policy(rate: f64, latency: Option<Duration>, max_attempts: u32) -> RetryPolicy {
    let mut faults = FaultInjection::builder().rate(rate).seed(7);
    if let Some(l) = latency {
        faults = faults.latency(l);
    }
    let Ok(faults) = faults.build() else {
        panic!("invalid faults")
    };
    match RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(Duration::from_millis(1))
        .jitter(Jitter::None)
        .inject_faults(faults)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!("invalid policy"),
    }
}

static TENTH: RetryPolicy = policy(0.1, None, 3);
static BODY_RUNS: AtomicU64 = AtomicU64::new(0);

#[retryable(policy = &TENTH)]
async fn always_ok() -> Result<u32, std::io::Error> {
    BODY_RUNS.fetch_add(1, Ordering::Relaxed);
    Ok(1)
}

/// Ten thousand calls through the attribute: the injected faults are the attempts beyond the
/// body's runs.
async fn run_attribute() -> u64 {
    TENTH.rewind_faults();
    BODY_RUNS.store(0, Ordering::Relaxed);
    for _ in 0..10_000 {
        // An injected error is retried; three in a row fail the call.
        let _ = always_ok().await;
    }
    let attempts = TENTH.faults_drawn();
    attempts - BODY_RUNS.load(Ordering::Relaxed)
}

#[tokio::test(start_paused = true)]
async fn attribute_rate_a_tenth_injects_a_thousand_and_the_same_on_a_rerun() {
    let first = run_attribute().await;
    assert!((900..=1100).contains(&first), "{first}");
    assert_eq!(run_attribute().await, first);
}

async fn run_closure(policy: &RetryPolicy) -> (u64, u64) {
    let mut runs = 0u64;
    let mut failed = 0u64;
    for _ in 0..10_000 {
        let out = policy
            .retry(|| {
                runs += 1;
                async { Ok::<_, std::io::Error>(()) }
            })
            .await;
        if out.is_err() {
            failed += 1;
        }
    }
    (policy.faults_drawn() - runs, failed)
}

#[tokio::test(start_paused = true)]
async fn closure_rate_a_tenth_injects_a_thousand_and_the_same_on_a_rerun() {
    let p = policy(0.1, None, 3);
    let (first, _) = run_closure(&p).await;
    assert!((900..=1100).contains(&first), "{first}");
    let fresh = policy(0.1, None, 3);
    assert_eq!(run_closure(&fresh).await.0, first);
    p.rewind_faults();
    assert_eq!(run_closure(&p).await.0, first);
}

#[tokio::test(start_paused = true)]
async fn rate_zero_injects_nothing() {
    let p = policy(0.0, Some(Duration::from_millis(50)), 3);
    let t0 = tokio::time::Instant::now();
    let (injected, failed) = run_closure(&p).await;
    assert_eq!((injected, failed), (0, 0));
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

static ALWAYS: RetryPolicy = policy(1.0, None, 3);
static ALWAYS_RUNS: AtomicU64 = AtomicU64::new(0);

#[retryable(policy = &ALWAYS)]
async fn never_reached() -> Result<(), std::io::Error> {
    ALWAYS_RUNS.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn rate_one_fails_every_call_after_max_attempts_without_running_the_body() {
    for _ in 0..5 {
        let err = never_reached().await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        let elapsed = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<reattempt::Elapsed>())
            .expect("an Elapsed inside");
        assert!(elapsed.is_injected());
    }
    assert_eq!(ALWAYS_RUNS.load(Ordering::Relaxed), 0);
    assert_eq!(ALWAYS.faults_drawn(), 15, "3 attempts per call");

    let p = policy(1.0, None, 3);
    let mut runs = 0;
    let out = p
        .retry(|| {
            runs += 1;
            async { Ok::<_, std::io::Error>(()) }
        })
        .await;
    assert_eq!(out.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
    assert_eq!((runs, p.faults_drawn()), (0, 3));
}

#[tokio::test(start_paused = true)]
async fn injected_latency_adds_exactly_that_to_each_injected_attempt() {
    // Every attempt injected, 50 ms each, then failed: 3 attempts and sleeps of 1 and 2 ms.
    let p = policy(1.0, Some(Duration::from_millis(50)), 3);
    let t0 = tokio::time::Instant::now();
    let out = p.retry(|| async { Ok::<_, std::io::Error>(()) }).await;
    assert!(out.is_err());
    assert_eq!(t0.elapsed(), Duration::from_millis(3 * 50 + 1 + 2));

    // Latency only: the attempt is made after it and succeeds.
    let slow = FaultInjection::builder()
        .latency(Duration::from_millis(40))
        .latency_rate(1.0)
        .build()
        .unwrap();
    let p = RetryPolicy::builder().inject_faults(slow).build().unwrap();
    let t0 = tokio::time::Instant::now();
    let out = p.retry(|| async { Ok::<_, std::io::Error>(7) }).await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(t0.elapsed(), Duration::from_millis(40));

    // The latency counts against the attempt's timeout: past it, the attempt times out.
    let p = RetryPolicy::builder()
        .max_attempts(1)
        .timeout(Duration::from_millis(10))
        .inject_faults(slow)
        .build()
        .unwrap();
    let t0 = tokio::time::Instant::now();
    let mut runs = 0;
    let err = p
        .retry(|| {
            runs += 1;
            async { Ok::<_, std::io::Error>(()) }
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!((runs, t0.elapsed()), (0, Duration::from_millis(10)));
}

static SLOW: RetryPolicy = policy(1.0, Some(Duration::from_millis(25)), 2);

#[retryable(policy = &SLOW)]
async fn slow_failure() -> Result<(), std::io::Error> {
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn attribute_latency_on_the_paused_clock() {
    let t0 = tokio::time::Instant::now();
    assert!(slow_failure().await.is_err());
    assert_eq!(t0.elapsed(), Duration::from_millis(2 * 25 + 1));
}

#[tokio::test(start_paused = true)]
async fn without_a_timeout_conversion_only_latency_is_injected() {
    let p = policy(1.0, Some(Duration::from_millis(30)), 3);
    let t0 = tokio::time::Instant::now();
    let out = p
        .retry(|| async { Ok::<_, u16>(5) })
        .without_timeout()
        .await;
    assert_eq!(out, Ok(5));
    assert_eq!(t0.elapsed(), Duration::from_millis(30));
}

/// The config key, through the facade (feature `serde` too; the TOML form is in retry-runtime's config docs).
#[cfg(feature = "serde")]
#[tokio::test(start_paused = true)]
async fn a_config_file_injects_faults() {
    let p: RetryPolicy = config_policy();
    let (injected, _) = run_closure(&p).await;
    assert!((900..=1100).contains(&injected), "{injected}");
}

#[cfg(feature = "serde")]
fn config_policy() -> RetryPolicy {
    serde_json::from_str(
        r#"{ "max_attempts": 3, "delay": "1ms", "inject_faults": { "rate": 0.1, "latency": "5ms", "seed": 7 } }"#,
    )
    .unwrap()
}
