//! "Attempts that are never made cost nothing and count nothing"
//! (`never_made_attempts.rs`). A call whose second attempt the breaker rejects and a call whose
//! second attempt is not made (the deadline was spent when the backoff sleep woke late) both made
//! exactly one attempt, and `reattempt.calls` files both under `failed_without_retry` (the
//! not-made one was filed under `failed_with_retry`, its never-made attempt counted, before a
//! hostile review caught it).
#![cfg(feature = "metrics")]

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_runtime::__private::{Call, Decision, Guards};
use retry_runtime::{CircuitBreaker, Elapsed, FnHooks, Jitter, RetryPolicy};

#[derive(Debug)]
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
    .max_elapsed(Duration::from_secs(1))
    .jitter(Jitter::None)
    .build()
{
    Ok(p) => p,
    Err(_) => panic!(),
};

/// One attempt fails; then either the breaker trips (the second attempt is rejected) or the
/// backoff sleep wakes after the deadline (the second attempt is not made).
async fn call(name: &'static str, late_wake: bool) {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let mut call = Call::new(&POLICY);
    loop {
        let permit = call.admit(Some(&breaker), None, false, true).breaker();
        let outcome: Result<(), Fail> = if permit.rejected() {
            Err(Fail)
        } else {
            call.attempt_timed(async { Err(Fail) }).await
        };
        let guards = if late_wake {
            Guards::NONE
        } else {
            Guards::NONE.breaker(&breaker, permit)
        };
        match call.decide(name, &mut FnHooks::of(&outcome), outcome, guards) {
            Decision::Stop(_) => break,
            Decision::Retry(d) => {
                call.sleep(d).await;
                if late_wake {
                    // A busy thread: the sleep's task runs well after the deadline.
                    tokio::time::advance(Duration::from_secs(2)).await;
                }
            }
        }
    }
}

fn outcomes(name: &'static str, late_wake: bool) -> Vec<String> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(call(name, late_wake));
    });
    let mut out: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| {
            let n = k.key().name();
            n == "reattempt.calls" || n == "reattempt.attempts"
        })
        .map(|(k, _, _, v)| {
            let labels: Vec<String> = k
                .key()
                .labels()
                .filter(|l| l.key() == "reattempt.outcome")
                .map(|l| l.value().to_owned())
                .collect();
            let v = match v {
                DebugValue::Counter(n) => n,
                _ => 0,
            };
            format!("{} {labels:?} = {v}", k.key().name())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn one_attempt_made_then_none_is_filed_alike_whether_rejected_or_not_made() {
    let rejected = outcomes("rejected", false);
    let not_made = outcomes("not_made", true);
    assert!(
        rejected.iter().any(|l| l.contains("failed_without_retry")),
        "{rejected:?}"
    );
    assert_eq!(
        not_made, rejected,
        "the same single attempt, filed differently"
    );
}
