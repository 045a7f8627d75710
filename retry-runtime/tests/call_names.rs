//! A call named by a closure (as `#[retryable]` names it by default)
//! gets exactly the metrics of the same call named by a `&'static str`, on every event path.
#![cfg(feature = "metrics")]

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_runtime::__private::{Call, CallName, Decision, Guards};
use retry_runtime::{CircuitBreaker, Elapsed, FnHooks, Jitter, RetryBudget, RetryPolicy};

#[derive(Debug, PartialEq)]
struct Fail;

impl From<Elapsed> for Fail {
    fn from(_: Elapsed) -> Self {
        Fail
    }
}

static POLICY: RetryPolicy = match RetryPolicy::builder()
    .max_attempts(3)
    .delay(Duration::from_millis(100))
    .timeout(Duration::from_secs(1))
    .jitter(Jitter::None)
    .build()
{
    Ok(p) => p,
    Err(_) => panic!(),
};

static OUTER: RetryPolicy = match RetryPolicy::builder()
    .max_elapsed(Duration::from_millis(50))
    .build()
{
    Ok(p) => p,
    Err(_) => panic!(),
};

async fn one(
    name: impl CallName,
    outcomes: &[Result<u32, Fail>],
    retry_ok: bool,
    guards: impl Fn() -> Guards<'static>,
    breaker: Option<&'static CircuitBreaker>,
) {
    let mut call = Call::new(&POLICY);
    let mut script = outcomes
        .iter()
        .map(|o| o.as_ref().map(|v| *v).map_err(|_| Fail));
    loop {
        let permit = breaker.map(|b| call.admit(Some(b), None, false, true).breaker());
        let outcome = if permit.is_some_and(|p| p.rejected()) {
            Err(Fail)
        } else {
            let next = script.next().unwrap_or(Err(Fail));
            call.attempt_timed(async { next }).await
        };
        let mut g = guards();
        if let (Some(b), Some(p)) = (breaker, permit) {
            g = g.breaker(b, p);
        }
        match call.decide(
            name,
            &mut FnHooks::of(&outcome).retry_if_ok(|v| retry_ok && *v == 0),
            outcome,
            g,
        ) {
            Decision::Stop(_) => break,
            Decision::Retry(d) => call.sleep(d).await,
        }
    }
}

async fn scenarios(name: impl CallName) {
    // Fresh per run: each run must see the same guards.
    let small: &'static RetryBudget = Box::leak(Box::new(
        RetryBudget::builder()
            .max_tokens(5)
            .retry_cost(5)
            .build()
            .unwrap(),
    ));
    let open: &'static CircuitBreaker = Box::leak(Box::new(
        CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(Duration::from_secs(3600))
            .build()
            .unwrap(),
    ));
    open.record(open.try_acquire().unwrap(), false);
    one(name, &[Ok(1)], false, || Guards::NONE, None).await;
    one(name, &[Err(Fail), Ok(1)], false, || Guards::NONE, None).await;
    one(
        name,
        &[Err(Fail), Err(Fail), Err(Fail)],
        false,
        || Guards::NONE,
        None,
    )
    .await;
    one(name, &[Ok(0), Ok(0), Ok(0)], true, || Guards::NONE, None).await;
    one(
        name,
        &[Err(Fail), Err(Fail)],
        false,
        || Guards::NONE.budget(small),
        None,
    )
    .await;
    one(name, &[Ok(1)], false, || Guards::NONE, Some(open)).await;
    // A spent deadline inherited from an enclosing call: the attempt is not made.
    let mut outer = Call::new(&OUTER);
    tokio::time::advance(Duration::from_millis(60)).await;
    outer
        .attempt(one(name, &[Ok(1)], false, || Guards::NONE, None))
        .await;
}

fn snapshot(name: impl CallName) -> Vec<String> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(scenarios(name));
    });
    let mut out: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| {
            let v = match v {
                DebugValue::Counter(n) => n.to_string(),
                DebugValue::Histogram(h) => format!("{:?}", h.len()),
                DebugValue::Gauge(g) => format!("{g:?}"),
            };
            format!("{:?} = {v}", k.key())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_closure_name_gives_the_same_metrics_as_a_str() {
    let by_str = snapshot("fetch");
    let by_fn = snapshot(|| "fetch");
    for metric in [
        "reattempt.calls",
        "reattempt.attempts",
        "reattempt.breaker.rejections",
        "reattempt.budget.refusals",
        "reattempt.retry.delay",
    ] {
        assert!(
            by_str.iter().any(|k| k.contains(metric)),
            "{metric}: {by_str:#?}"
        );
    }
    assert!(
        by_str.iter().all(|k| k.contains("\"fetch\"")),
        "{by_str:#?}"
    );
    assert_eq!(by_str, by_fn);
}
