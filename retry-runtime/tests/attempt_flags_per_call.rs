//! Whether an attempt timed out or was not made is the call's own state (packed in the engine's
//! attempt word), never a thread-local: user code that runs between an attempt's end and its
//! decision (the body's `Drop`, the error conversion, `timeout_if`, the `Transient` probe) may make
//! retrying calls of its own or panic, and neither may change another call's accounting. Each
//! test here failed while the flags were thread-locals (hostile review 4).

use std::time::Duration;

use retry_runtime::__private::{Admission, Call, Decision, Guards};
use retry_runtime::{
    BreakerState, CircuitBreaker, Elapsed, FnHooks, Jitter, RetryBudget, RetryPolicy,
};

#[derive(Debug, PartialEq)]
enum ApiError {
    Reset,
    Elapsed,
}

impl From<Elapsed> for ApiError {
    fn from(_: Elapsed) -> Self {
        ApiError::Elapsed
    }
}

/// A blocking retrying call through `breaker`, as a blocking `#[retryable(circuit_breaker = …,
/// retry_if = …)] fn` expands to, whose one attempt fails with an error it does not retry (a
/// 400: the dependency answered, so the breaker must count a success).
fn blocking_cleanup_call(breaker: &CircuitBreaker) {
    static POLICY: RetryPolicy = match RetryPolicy::builder().max_attempts(3).build() {
        Ok(p) => p,
        Err(_) => panic!(),
    };
    let mut call = Call::new(&POLICY);
    let permit = Admission::from(breaker.try_acquire());
    let res: Result<(), &str> = call.attempt_blocking(|| Err("400 bad request"));
    let d = call.decide(
        "cleanup",
        &mut FnHooks::of(&res).retry_if(|_| false),
        res,
        Guards::NONE.breaker(breaker, permit),
    );
    assert!(matches!(d, Decision::Stop(Err(_))));
}

/// Holds a lease that a blocking retrying call gives back when the attempt's future is dropped.
struct Lease<'a>(&'a CircuitBreaker);

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        blocking_cleanup_call(self.0);
    }
}

fn cleanup_breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .name("cleanup")
        .failure_threshold(1)
        .build()
        .unwrap()
}

fn budget() -> RetryBudget {
    RetryBudget::builder()
        .max_tokens(100)
        .retry_cost(5)
        .timeout_cost(10)
        .build()
        .unwrap()
}

/// Closure API: the attempt that the policy's `timeout` cut is dropped after it is marked timed
/// out and before `decide`; a cleanup call in its `Drop` must not take the outer call's mark.
#[tokio::test(start_paused = true)]
async fn closure_api_a_call_in_the_drop_of_a_timed_out_attempt_takes_its_timeout() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .timeout(Duration::from_secs(1))
        .jitter(Jitter::None)
        // A timed-out attempt is repeated only on a call that is safe to repeat.
        .idempotent(true)
        .build()
        .unwrap();
    let cleanup = cleanup_breaker();
    let budget = budget();
    let out: Result<(), ApiError> = policy
        .retry(|| {
            let lease = Lease(&cleanup);
            async move {
                let _lease = lease;
                std::future::pending::<()>().await;
                Err(ApiError::Reset)
            }
        })
        .budget(&budget)
        .await;
    assert_eq!(out, Err(ApiError::Elapsed));
    assert_eq!(
        budget.available(),
        90,
        "the outer retry followed a timeout: timeout_cost (10), not retry_cost (5)"
    );
    assert_eq!(
        cleanup.state(),
        BreakerState::Closed,
        "the cleanup call's non-retried 400 is the dependency answering: a success, not a timeout"
    );
}

/// The attribute's path (`Call::attempt_timed`): the body's future is dropped at the end of the
/// `.await` (after the attempt is marked timed out), before `decide`.
#[tokio::test(start_paused = true)]
async fn attempt_timed_a_call_in_the_drop_of_a_timed_out_attempt_takes_its_timeout() {
    static POLICY: RetryPolicy = match RetryPolicy::builder()
        .max_attempts(2)
        .timeout(Duration::from_secs(1))
        .jitter(Jitter::None)
        .idempotent(true)
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    };
    let cleanup = cleanup_breaker();
    let budget = budget();
    let mut call = Call::new(&POLICY);
    let out: Result<(), ApiError> = loop {
        let lease = Lease(&cleanup);
        let res = call
            .attempt_timed(async move {
                let _lease = lease;
                std::future::pending::<()>().await;
                Err(ApiError::Reset)
            })
            .await;
        match call.decide(
            "outer",
            &mut FnHooks::of(&res),
            res,
            Guards::NONE.budget(&budget),
        ) {
            Decision::Stop(r) => break r,
            Decision::Retry(d) => call.sleep(d).await,
        }
    };
    assert_eq!(out, Err(ApiError::Elapsed));
    assert_eq!(
        cleanup.state(),
        BreakerState::Closed,
        "the cleanup's 400 counted as a failure"
    );
    assert_eq!(
        budget.available(),
        90,
        "the outer retry was charged retry_cost, not timeout_cost"
    );
}

/// A panic in the closure API's `timeout_if` hook must leave nothing for the next call on the
/// thread (tokio catches the task's panic; with a thread-local mark, the next call once gave up
/// at its first error, "deadline reached", without retrying). A hook is asked only about an
/// attempt that was made: one not made (a spent deadline) is not the error's doing.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_panic_in_timeout_if_leaves_nothing_for_the_next_call() {
    static OUTER: RetryPolicy = match RetryPolicy::builder()
        .max_elapsed(Duration::from_secs(1))
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    };
    let task = tokio::spawn(async {
        let mut outer = Call::new(&OUTER);
        outer
            .attempt(async {
                let inner = RetryPolicy::builder()
                    .timeout(Duration::from_secs(1))
                    .build()
                    .unwrap();
                let _: Result<(), ApiError> = inner
                    .retry(|| async { Err(ApiError::Reset) })
                    .timeout_if(|_: &ApiError| panic!("a buggy timeout_if"))
                    .await;
            })
            .await;
    });
    assert!(task.await.unwrap_err().is_panic());

    // A fresh, unrelated call on the same thread: fails once, then succeeds.
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let mut attempts = 0;
    let out: Result<u32, ApiError> = policy
        .retry(|| {
            attempts += 1;
            let n = attempts;
            async move { if n < 2 { Err(ApiError::Reset) } else { Ok(n) } }
        })
        .await;
    assert_eq!(
        out,
        Ok(2),
        "the next call on the thread did not retry its first error"
    );
}

/// The control of the test above: the same first task without the panic leaves nothing behind.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn control_without_the_panic_the_next_call_retries() {
    static OUTER: RetryPolicy = match RetryPolicy::builder()
        .max_elapsed(Duration::from_secs(1))
        .build()
    {
        Ok(p) => p,
        Err(_) => panic!(),
    };
    let task = tokio::spawn(async {
        let mut outer = Call::new(&OUTER);
        outer
            .attempt(async {
                // The enclosing call's clock started with this attempt: now its deadline is spent.
                tokio::time::advance(Duration::from_secs(2)).await;
                let inner = RetryPolicy::builder()
                    .timeout(Duration::from_secs(1))
                    .build()
                    .unwrap();
                let r: Result<(), ApiError> = inner
                    .retry(|| async { Ok(()) })
                    .timeout_if(|_: &ApiError| false)
                    .await;
                assert_eq!(r, Err(ApiError::Elapsed));
            })
            .await;
    });
    task.await.unwrap();
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let mut attempts = 0;
    let out: Result<u32, ApiError> = policy
        .retry(|| {
            attempts += 1;
            let n = attempts;
            async move { if n < 2 { Err(ApiError::Reset) } else { Ok(n) } }
        })
        .await;
    assert_eq!(out, Ok(2));
}

/// A config file's `max_attempts` above `u32::MAX` is told "at most 4294967295", but every value
/// from 2^30 up is refused too: the limit it names is not the limit.
#[cfg(feature = "serde")]
#[test]
fn config_names_the_real_limit_of_max_attempts() {
    // `u32::MAX` is "until the deadline": the most a policy allows, as in the builder.
    let forever = serde_json::from_str::<RetryPolicy>(r#"{"max_attempts": 4294967295}"#).unwrap();
    assert_eq!(forever.max_attempts(), RetryPolicy::MAX_ATTEMPTS);
    let at_most = serde_json::from_str::<RetryPolicy>(r#"{"max_attempts": 4294967294}"#)
        .unwrap_err()
        .to_string();
    assert!(at_most.contains("must be at most 67108863"), "{at_most}");
    let above = serde_json::from_str::<RetryPolicy>(r#"{"max_attempts": 4294967296}"#)
        .unwrap_err()
        .to_string();
    assert!(
        above.contains("must be at most 67108863"),
        "one key, two different limits: {above:?} vs {at_most:?}"
    );
    let toml = toml::from_str::<RetryPolicy>("max_attempts = 5000000000")
        .unwrap_err()
        .to_string();
    assert!(toml.contains("must be at most 67108863"), "{toml}");
}
