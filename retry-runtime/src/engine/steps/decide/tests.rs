use super::*;
use crate::__private::admit;
use crate::guards::breaker::CircuitBreaker;
use crate::{FnHooks, Jitter, RetryPolicy};

/// A call whose first attempt fails (opening a breaker that trips at once) and whose retry the
/// breaker turns away: what ends it, decided by `decide_keeping` (`apart` false) or by
/// `decide_rejected` (`apart` true), and what the budget holds after it.
fn rejected_retry(apart: bool, first_rejected: bool) -> (Result<u8, &'static str>, u32, bool) {
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let budget = RetryBudget::builder().build().unwrap();
    let mut engine = Engine::new(&policy);
    let mut last = None;
    if first_rejected {
        breaker.record(breaker.try_acquire().unwrap(), false);
    } else {
        let admitted = admit(&engine, Some(&breaker), None, false, false);
        crate::__private::begin(&mut engine, false);
        let outcome: Result<u8, &str> = Err("unavailable");
        let guards = Guards::NONE
            .admitted(Some(&breaker), None, admitted)
            .budget(&budget);
        let first = decide_keeping(
            &mut engine,
            "demo",
            &mut FnHooks::of(&outcome),
            outcome,
            guards,
            &mut last,
        );
        assert!(matches!(first, Decision::Retry(_)));
    }
    let admitted = admit(&engine, Some(&breaker), None, false, false);
    assert_eq!(admitted.rejection(), Some(GiveUpReason::BreakerOpen));
    let guards = Guards::NONE
        .admitted(Some(&breaker), None, admitted)
        .budget(&budget);
    let result = if apart {
        decide_rejected(&mut engine, "demo", "open", guards, &mut last)
    } else {
        let rejection: Result<u8, &str> = Err("open");
        let hooks = &mut FnHooks::of(&rejection);
        match decide_keeping(&mut engine, "demo", hooks, rejection, guards, &mut last) {
            Decision::Stop(result) => result,
            Decision::Retry(_) => panic!("a rejection was retried"),
        }
    };
    (result, budget.available(), last.is_none())
}

#[tokio::test(start_paused = true)]
async fn a_rejection_decided_apart_ends_the_call_as_decide_keeping_does() {
    // A rejected retry: the last real outcome, taken out of `last`; the retry's cost refunded.
    let apart = rejected_retry(true, false);
    assert_eq!(apart.0, Err("unavailable"));
    assert!(apart.2, "the kept outcome is taken");
    assert_eq!(apart, rejected_retry(false, false));
    // A rejected first attempt: the rejection itself.
    let apart = rejected_retry(true, true);
    assert_eq!(apart.0, Err("open"));
    assert_eq!(apart, rejected_retry(false, true));
}
