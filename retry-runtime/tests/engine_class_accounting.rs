//! Through the engine's packed word, what a call pays and gets back by class matches the AWS
//! quota model (the hostile review of the classes; it passed before the fixes, and stays).
// ---------------------------------------------------------------------------------------------
// 6. (a) Property: through the engine's packed word, what a call pays and gets back by class
//    matches the AWS quota model (pay cost(class) per retry; a success refunds the last retry's
//    cost, or deposits 1 on a first-try success), capped at max_tokens.
mod accounting {
    use proptest::prelude::*;
    use retry_runtime::__private::{Decision, Engine};
    use retry_runtime::{ErrorClass, Jitter, RetryBudget, RetryPolicy};

    fn class(n: u8) -> ErrorClass {
        [
            ErrorClass::Transient,
            ErrorClass::Timeout,
            ErrorClass::Throttling,
        ][usize::from(n % 3)]
    }

    proptest! {
        #[test]
        fn paid_and_refunded_by_the_same_class(
            calls in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..5), any::<bool>()), 1..40),
            max in 20u32..80,
        ) {
            let budget = RetryBudget::aws_2026().max_tokens(max).build().unwrap();
            let policy = RetryPolicy::builder().max_attempts(4).jitter(Jitter::None).build().unwrap();
            let mut model = i64::from(max);
            let now = tokio::time::Instant::now();
            for (failures, succeeds) in calls {
                let mut engine = Engine::new(&policy);
                engine.begin(false, || now, None);
                let mut last_paid: Option<u32> = None;
                let mut over = false;
                for c in &failures {
                    engine.mark_class(class(*c));
                    let cost = budget.cost(class(*c));
                    match engine.after_failure_chosen(true, None, |_, _| None, now, None, Some(&budget)) {
                        Decision::Retry(_) => {
                            model -= i64::from(cost);
                            last_paid = Some(cost);
                            engine.begin(false, || now, None);
                        }
                        Decision::Stop(_) => { over = true; break; }
                    }
                }
                if !over && succeeds {
                    engine.succeeded(&budget);
                    model = (model + i64::from(last_paid.unwrap_or(1))).min(i64::from(max));
                }
                prop_assert_eq!(i64::from(budget.available()), model);
            }
        }
    }
}
