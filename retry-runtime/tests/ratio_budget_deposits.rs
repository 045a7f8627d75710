//! The ratio budget counts every call once, when its first attempt ends: its rustdoc says "Every call deposits `ratio`
//! of a retry when its first attempt ends, whatever its result; every retry (and hedge)
//! withdraws one".

use std::time::Duration;

use retry_runtime::{Backoff, HedgeAfter, Jitter, RetryBudget, RetryPolicy, context};
use tokio::time::sleep;

const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn a_hedged_call_deposits_its_request_as_every_call_does() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .delay(20 * MS)
        .backoff(Backoff::Fixed)
        .jitter(Jitter::None)
        .idempotent(true)
        .hedge_after(HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap();
    // 1 retry per request, no floor; 10 unhedged calls earn 10.
    let budget = RetryBudget::ratio(1.0).build().unwrap();
    for _ in 0..10 {
        let out: std::io::Result<u32> = policy.retry(|| async { Ok(1) }).budget(&budget).await;
        out.unwrap();
    }
    assert_eq!(budget.available(), 10);
    // 10 calls whose first attempt is slow: each hedges (withdraws 1) and, as a request made,
    // deposits 1: the balance stays at 10.
    for _ in 0..10 {
        let out: std::io::Result<u32> = policy
            .retry(|| async {
                let n = context().unwrap().attempt();
                sleep(if n == 1 { 80 * MS } else { 200 * MS }).await;
                Ok(n)
            })
            .budget(&budget)
            .await;
        assert_eq!(out.unwrap(), 1, "the first attempt wins");
    }
    assert_eq!(
        budget.available(),
        10,
        "10 requests made, 10 hedges paid: every call deposits its ratio"
    );
}

/// gRPC's pushback "do not retry" (`Hooks::retry_refused`): the first attempt was made and
/// failed, so the ratio budget must count the request, as for any other failure.
#[tokio::test(start_paused = true)]
async fn a_first_failure_whose_retry_the_hooks_refuse_counts_as_a_request() {
    use retry_runtime::__private::{Decision, Engine, Guards, begin, decide};
    use retry_runtime::{GiveUpReason, Hooks};

    struct Pushback;
    impl Hooks<(), &'static str> for Pushback {
        fn retry_if(&mut self, _: &&'static str) -> bool {
            true
        }
        fn retry_refused(&mut self) -> Option<GiveUpReason> {
            Some(GiveUpReason::NotRetryable)
        }
    }
    struct Plain;
    impl Hooks<(), &'static str> for Plain {
        fn retry_if(&mut self, _: &&'static str) -> bool {
            false
        }
    }

    let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    let run = |refused: bool| {
        let budget = RetryBudget::ratio(1.0).build().unwrap();
        for _ in 0..4 {
            let mut engine = Engine::new(&policy);
            begin(&mut engine, false);
            let d = if refused {
                decide(
                    &mut engine,
                    "x",
                    &mut Pushback,
                    Err("unavailable"),
                    Guards::NONE.budget(&budget),
                )
            } else {
                decide(
                    &mut engine,
                    "x",
                    &mut Plain,
                    Err("unavailable"),
                    Guards::NONE.budget(&budget),
                )
            };
            assert!(matches!(d, Decision::Stop(Err(_))));
        }
        budget.available()
    };
    assert_eq!(run(false), 4, "a non-retryable first failure deposits");
    assert_eq!(
        run(true),
        4,
        "a refused retry's first failure is a request made, too"
    );
}

/// An `Ok` value that is still the dependency's failure (`Hooks::ok_failed`, a 503 returned as a
/// response) ends the call without a retry: its first attempt was a request made, and counts.
#[tokio::test(start_paused = true)]
async fn a_first_attempt_whose_ok_value_failed_counts_as_a_request() {
    use retry_runtime::__private::{Decision, Engine, Guards, begin, decide};
    use retry_runtime::Hooks;

    struct Failed503;
    impl Hooks<u16, &'static str> for Failed503 {
        fn retry_if(&mut self, _: &&'static str) -> bool {
            false
        }
        fn ok_failed(&mut self, status: &u16) -> bool {
            *status >= 500
        }
    }

    let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    let budget = RetryBudget::ratio(1.0).build().unwrap();
    for _ in 0..3 {
        let mut engine = Engine::new(&policy);
        begin(&mut engine, false);
        let d = decide(
            &mut engine,
            "x",
            &mut Failed503,
            Ok(503),
            Guards::NONE.budget(&budget),
        );
        assert!(matches!(d, Decision::Stop(Ok(503))));
    }
    assert_eq!(budget.available(), 3, "three requests made, three deposits");
}
