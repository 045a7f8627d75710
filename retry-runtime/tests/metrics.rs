//! The `metrics` feature: counters for Resilience4j's four call outcomes, attempts, breaker
//! rejections and budget refusals, and a histogram of retry delays, each labelled with the name.
#![cfg(feature = "metrics")]

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::{CompositeKey, MetricKind};
use retry_runtime::__private::{Admission, Call, Decision, Guards};
use retry_runtime::{FnHooks, Jitter, RetryBudget, RetryPolicy};

static POLICY: RetryPolicy = match RetryPolicy::builder()
    .max_attempts(3)
    .delay(Duration::from_millis(100))
    .jitter(Jitter::None)
    .build()
{
    Ok(p) => p,
    Err(_) => panic!("valid"),
};

/// Drives one call through the runtime as generated code does, with a scripted outcome per
/// attempt, sleeping on the paused clock.
async fn call(
    outcomes: &[Result<u32, &'static str>],
    budget: Option<&RetryBudget>,
) -> Result<u32, &'static str> {
    let mut call = Call::new(&POLICY);
    let mut script = outcomes.iter().copied();
    loop {
        let outcome = call
            .attempt(async { script.next().unwrap_or(Err("down")) })
            .await;
        let guards = budget.map_or(Guards::NONE, |b| Guards::NONE.budget(b));
        match call.decide("fetch", &mut FnHooks::of(&outcome), outcome, guards) {
            Decision::Stop(r) => break r,
            Decision::Retry(d) => call.sleep(d).await,
        }
    }
}

fn counter(snapshot: &[(CompositeKey, DebugValue)], name: &str, outcome: Option<&str>) -> u64 {
    snapshot
        .iter()
        .filter(|(k, _)| k.kind() == MetricKind::Counter && k.key().name() == name)
        .filter(|(k, _)| {
            k.key()
                .labels()
                .any(|l| l.key() == "reattempt.name" && l.value() == "fetch")
        })
        .filter(|(k, _)| {
            outcome.is_none_or(|o| {
                k.key()
                    .labels()
                    .any(|l| l.key() == "reattempt.outcome" && l.value() == o)
            })
        })
        .map(|(_, v)| match v {
            DebugValue::Counter(n) => *n,
            _ => 0,
        })
        .sum()
}

#[test]
fn calls_attempts_refusals_and_delays_are_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let budget = RetryBudget::builder()
        .max_tokens(5)
        .retry_cost(5)
        .timeout_cost(5)
        .success_deposit(0)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            assert_eq!(call(&[Ok(1)], None).await, Ok(1));
            assert_eq!(call(&[Err("busy"), Ok(2)], None).await, Ok(2));
            assert_eq!(call(&[Err("down")], None).await, Err("down"));
            // The budget pays for one retry, then refuses the next.
            assert_eq!(call(&[Err("down")], Some(&budget)).await, Err("down"));
        });
    });
    let snapshot: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k, v))
        .collect();
    assert_eq!(
        counter(
            &snapshot,
            "reattempt.calls",
            Some("successful_without_retry")
        ),
        1
    );
    assert_eq!(
        counter(&snapshot, "reattempt.calls", Some("successful_with_retry")),
        1
    );
    assert_eq!(
        counter(&snapshot, "reattempt.calls", Some("failed_without_retry")),
        0
    );
    assert_eq!(
        counter(&snapshot, "reattempt.calls", Some("failed_with_retry")),
        2
    );
    assert_eq!(
        counter(&snapshot, "reattempt.attempts", None),
        1 + 2 + 3 + 2
    );
    assert_eq!(counter(&snapshot, "reattempt.budget.refusals", None), 1);
    let delays: Vec<f64> = snapshot
        .iter()
        .filter(|(k, _)| k.key().name() == "reattempt.retry.delay")
        .flat_map(|(_, v)| match v {
            DebugValue::Histogram(values) => values.iter().map(|f| f.into_inner()).collect(),
            _ => vec![],
        })
        .collect();
    assert_eq!(delays.len(), 1 + 2 + 1);
    assert!(
        delays
            .iter()
            .all(|d| (d - 0.1).abs() < 1e-9 || (d - 0.2).abs() < 1e-9),
        "{delays:?}"
    );
}

/// An `Ok` that `retry_if_ok` rejected, returned once no retry is left, is a failed call: the
/// budget deposits nothing for it, and the calls metric agrees.
#[test]
fn an_ok_that_retry_if_ok_rejected_counts_as_a_failed_call() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let mut call = Call::new(&POLICY);
            let out: Result<u32, &str> = loop {
                let outcome = call.attempt(async { Ok(503) }).await;
                match call.decide(
                    "fetch",
                    &mut FnHooks::of(&outcome).retry_if_ok(|v| *v == 503),
                    outcome,
                    Guards::NONE.budget(&budget),
                ) {
                    Decision::Stop(r) => break r,
                    Decision::Retry(d) => call.sleep(d).await,
                }
            };
            assert_eq!(out, Ok(503));
        });
    });
    assert_eq!(budget.available(), 90, "two retries paid, nothing back");
    let snapshot: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k, v))
        .collect();
    assert_eq!(
        counter(&snapshot, "reattempt.calls", Some("failed_with_retry")),
        1
    );
    assert_eq!(
        counter(&snapshot, "reattempt.calls", Some("successful_with_retry")),
        0
    );
}

/// A breaker's rejection is not an attempt: neither the generated code's driver (`Call` +
/// `decide`) nor the closure API counts it in `reattempt.attempts`.
#[test]
fn a_rejected_attempt_is_not_counted_as_an_attempt() {
    use retry_runtime::CircuitBreaker;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            // One real attempt, which fails and opens the breaker; its retry is rejected.
            let out: Result<u32, std::io::Error> = POLICY
                .retry(|| async { Err(std::io::ErrorKind::ConnectionReset.into()) })
                .circuit_breaker(&breaker)
                .name("fetch")
                .await;
            assert!(out.is_err());
            // The generated code's driver: the breaker rejects, the attempt is not made.
            let mut call = Call::new(&POLICY);
            let permit = Admission::from(breaker.try_acquire());
            assert!(permit.rejected());
            let outcome: Result<u32, std::io::Error> =
                Err(std::io::Error::other(retry_runtime::BreakerOpen::new()));
            let guards = Guards::NONE.breaker(&breaker, permit);
            let decision = call.decide("fetch", &mut FnHooks::of(&outcome), outcome, guards);
            assert!(matches!(decision, Decision::Stop(Err(_))));
            // The closure API: rejected too.
            let out: Result<u32, std::io::Error> = POLICY
                .retry(|| async { Ok(1) })
                .circuit_breaker(&breaker)
                .name("fetch")
                .await;
            assert!(out.is_err());
        });
    });
    let snapshot: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k, v))
        .collect();
    assert_eq!(
        counter(&snapshot, "reattempt.attempts", None),
        1,
        "only the attempt that was made"
    );
    assert_eq!(counter(&snapshot, "reattempt.breaker.rejections", None), 3);
}

#[test]
fn resumes_of_a_stream_are_counted() {
    use futures_util::{StreamExt, stream};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let items: Vec<Result<u64, &str>> = POLICY
                .retry_stream(|after: u64| async move {
                    let next = stream::iter([Ok(after + 1)]);
                    Ok(next.chain(stream::iter((after < 3).then_some(Err("reset")))))
                })
                .resume(0, |after, item: &u64| *after = *item)
                .without_timeout()
                .name("fetch")
                .collect()
                .await;
            assert_eq!(items, [Ok(1), Ok(2), Ok(3), Ok(4)]);
        });
    });
    let snapshot: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k, v))
        .collect();
    assert_eq!(counter(&snapshot, "reattempt.stream.resumes", None), 3);
    assert_eq!(
        counter(&snapshot, "reattempt.attempts", None),
        4,
        "each open that delivered"
    );
    assert_eq!(
        counter(&snapshot, "reattempt.calls", Some("successful_with_retry")),
        1,
        "re-opened: a retried call, though progress restarted its schedule"
    );
}
