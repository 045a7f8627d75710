//! Model-based test of the retry budget, against a reference model written from the documented
//! accounting (the AWS SDKs' standard retry quota):
//!
//! - a retry withdraws `retry_cost`, or `timeout_cost` after a timeout (our `timeout` cut the
//!   attempt, or its error says it was one); a bucket that cannot pay ends the call, taking nothing;
//! - a call that succeeds after retrying gets its last retry's cost back; a first-try success
//!   deposits `success_deposit`; both stop at `max_tokens`;
//! - a retry whose attempt the breaker rejected is refunded (an attempt never made costs nothing);
//! - an `Ok` that `retry_if_ok` rejected is a failure: its retry is paid, and returned at the end
//!   it deposits nothing;
//! - defaults: 500 tokens, `retry_cost` 5, `timeout_cost` twice `retry_cost` (at most the bucket),
//!   deposit 1; a bucket smaller than either cost is refused, naming the field.
//!
//! First the bucket's own operations, then whole calls driven as the generated code drives them
//! (`Call::attempt_timed` / `decide` with `Guards`), on tokio's paused clock.

#![allow(
    clippy::cast_possible_truncation,
    reason = "small counts in a test model"
)]

use std::future::pending;
use std::time::Duration;

use proptest::prelude::*;
use retry_runtime::__private::{Admission, Call, Decision, Guards};
use retry_runtime::{
    BreakerOpen, CircuitBreaker, Elapsed, FnHooks, Jitter, RetryBudget, RetryBudgetBuilder,
    RetryPolicy,
};

// ---------------------------------------------------------------------------------------------
// The bucket's operations
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Settings {
    max_tokens: Option<u32>,
    retry_cost: Option<u32>,
    timeout_cost: Option<u32>,
    success_deposit: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: u64,
    max: u64,
    retry: u64,
    timeout: u64,
    deposit: u64,
}

impl Settings {
    fn builder(self) -> RetryBudgetBuilder {
        let mut b = RetryBudget::builder();
        if let Some(n) = self.max_tokens {
            b = b.max_tokens(n);
        }
        if let Some(n) = self.retry_cost {
            b = b.retry_cost(n);
        }
        if let Some(n) = self.timeout_cost {
            b = b.timeout_cost(n);
        }
        if let Some(n) = self.success_deposit {
            b = b.success_deposit(n);
        }
        b
    }

    /// The model: the bucket, or the field a refusal must name.
    fn model(self) -> Result<Bucket, &'static str> {
        let max = u64::from(self.max_tokens.unwrap_or(500));
        let retry = u64::from(self.retry_cost.unwrap_or(5));
        // The default timeout cost: twice retry_cost, at most the bucket.
        let timeout = self
            .timeout_cost
            .map_or((retry * 2).min(u64::from(u32::MAX)).min(max), u64::from);
        if max == 0 {
            return Err("max_tokens");
        }
        if retry == 0 {
            return Err("retry_cost");
        }
        if timeout == 0 {
            return Err("timeout_cost");
        }
        // A cost the bucket can never pay names the cost, unless only max_tokens was set.
        let blame = |cost: &'static str, set: bool| {
            if set || self.max_tokens.is_none() {
                cost
            } else {
                "max_tokens"
            }
        };
        if retry > max {
            return Err(blame("retry_cost", self.retry_cost.is_some()));
        }
        if timeout > max {
            return Err(blame("timeout_cost", self.timeout_cost.is_some()));
        }
        Ok(Bucket {
            tokens: max,
            max,
            retry,
            timeout,
            deposit: u64::from(self.success_deposit.unwrap_or(1)),
        })
    }
}

impl Bucket {
    fn cost(&self, timeout: bool) -> u64 {
        if timeout { self.timeout } else { self.retry }
    }

    fn withdraw(&mut self, timeout: bool) -> bool {
        let cost = self.cost(timeout);
        let ok = self.tokens >= cost;
        if ok {
            self.tokens -= cost;
        }
        ok
    }

    fn put(&mut self, n: u64) {
        self.tokens = (self.tokens + n).min(self.max);
    }
}

fn count() -> impl Strategy<Value = Option<u32>> {
    prop_oneof![
        2 => Just(None),
        6 => (0..=25u32).prop_map(Some),
        1 => Just(Some(u32::MAX)),
        1 => Just(Some(u32::MAX - 1)),
    ]
}

fn any_settings() -> impl Strategy<Value = Settings> {
    (count(), count(), count(), count()).prop_map(|(m, r, t, d)| Settings {
        max_tokens: m,
        retry_cost: r,
        timeout_cost: t,
        success_deposit: d,
    })
}

#[derive(Debug, Clone, Copy)]
enum BucketOp {
    Withdraw(bool),
    Refund(bool),
    Deposit,
}

fn any_bucket_op() -> impl Strategy<Value = BucketOp> {
    prop_oneof![
        3 => any::<bool>().prop_map(BucketOp::Withdraw),
        1 => any::<bool>().prop_map(BucketOp::Refund),
        2 => Just(BucketOp::Deposit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn the_bucket_follows_its_model(
        settings in any_settings(),
        ops in prop::collection::vec(any_bucket_op(), 0..60),
    ) {
        let real = settings.builder().build();
        let mut model = match (real, settings.model()) {
            (Ok(real), Ok(model)) => (real, model),
            (Err(e), Err(field)) => {
                prop_assert_eq!(e.field(), field);
                return Ok(());
            }
            (real, model) => {
                return Err(TestCaseError::fail(format!("{settings:?}: {real:?} vs {model:?}")));
            }
        };
        let (real, model) = (&model.0, &mut model.1);
        prop_assert_eq!(u64::from(real.available()), model.tokens);
        for op in ops {
            match op {
                BucketOp::Withdraw(t) => prop_assert_eq!(real.try_withdraw(t), model.withdraw(t)),
                BucketOp::Refund(t) => {
                    real.refund(t);
                    model.put(model.cost(t));
                }
                BucketOp::Deposit => {
                    real.deposit();
                    model.put(model.deposit);
                }
            }
            prop_assert_eq!(u64::from(real.available()), model.tokens, "after {:?}", op);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Whole calls
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// `Ok(1)`.
    Ok,
    /// `Ok(0)`, which `retry_if_ok` rejects.
    OkToRetry,
    /// A retryable error.
    Busy,
    /// A retryable error that says it is a timeout (an HTTP client's read timeout).
    ReadTimeout,
    /// Never answers: our `timeout` cuts it.
    Hang,
    /// An error not retried.
    Fatal,
    /// The breaker rejects the attempt (it is never made).
    Rejected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallError {
    Busy,
    ReadTimeout,
    Elapsed,
    Fatal,
    Open,
}

impl From<Elapsed> for CallError {
    fn from(_: Elapsed) -> Self {
        CallError::Elapsed
    }
}

impl From<BreakerOpen> for CallError {
    fn from(_: BreakerOpen) -> Self {
        CallError::Open
    }
}

const TIMEOUT: Duration = Duration::from_secs(1);

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(Duration::from_millis(1))
        .jitter(Jitter::None)
        .timeout(TIMEOUT)
        .build()
        .unwrap()
}

/// Drives one call as the generated code does; gives its result and the attempts made.
async fn drive(
    policy: &RetryPolicy,
    budget: &RetryBudget,
    breaker: &CircuitBreaker,
    script: &[Outcome],
) -> (Result<u32, CallError>, usize) {
    let mut call = Call::new(policy);
    let mut made = 0;
    loop {
        let outcome = script.get(made).copied().unwrap_or(Outcome::Busy);
        let rejected = outcome == Outcome::Rejected;
        let res = if rejected {
            Err(CallError::Open)
        } else {
            made += 1;
            call.attempt_timed(async move {
                match outcome {
                    Outcome::Ok => Ok(1),
                    Outcome::OkToRetry => Ok(0),
                    Outcome::Busy => Err(CallError::Busy),
                    Outcome::ReadTimeout => Err(CallError::ReadTimeout),
                    Outcome::Fatal => Err(CallError::Fatal),
                    Outcome::Hang | Outcome::Rejected => pending().await,
                }
            })
            .await
        };
        let mut guards = Guards::NONE.budget(budget);
        if rejected {
            guards = guards.breaker(breaker, Admission::Rejected);
        }
        match call.decide(
            "model",
            &mut FnHooks::of(&res)
                .retry_if(|e| *e != CallError::Fatal)
                .retry_if_ok(|v| *v == 0)
                .timeout_if(|e| *e == CallError::ReadTimeout),
            res,
            guards,
        ) {
            Decision::Stop(r) => return (r, made),
            Decision::Retry(d) => call.sleep(d).await,
        }
    }
}

/// The model of one call: its result and the attempts made, updating the bucket.
fn model_call(
    bucket: &mut Bucket,
    max_attempts: u32,
    script: &[Outcome],
) -> (Result<u32, CallError>, usize) {
    let mut paid: Option<u64> = None;
    let mut made = 0;
    loop {
        let outcome = script.get(made).copied().unwrap_or(Outcome::Busy);
        let (result, timed_out) = match outcome {
            Outcome::Rejected => {
                if let Some(cost) = paid {
                    bucket.put(cost);
                }
                return (Err(CallError::Open), made);
            }
            Outcome::Ok => {
                bucket.put(paid.unwrap_or(bucket.deposit));
                return (Ok(1), made + 1);
            }
            Outcome::Fatal => return (Err(CallError::Fatal), made + 1),
            Outcome::OkToRetry => (Ok(0), false),
            Outcome::Busy => (Err(CallError::Busy), false),
            Outcome::ReadTimeout => (Err(CallError::ReadTimeout), true),
            Outcome::Hang => (Err(CallError::Elapsed), true),
        };
        made += 1;
        if made as u32 >= max_attempts || !bucket.withdraw(timed_out) {
            return (result, made);
        }
        paid = Some(bucket.cost(timed_out));
    }
}

fn any_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        4 => Just(Outcome::Ok),
        1 => Just(Outcome::OkToRetry),
        4 => Just(Outcome::Busy),
        2 => Just(Outcome::ReadTimeout),
        1 => Just(Outcome::Hang),
        1 => Just(Outcome::Fatal),
        1 => Just(Outcome::Rejected),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn calls_pay_and_are_paid_back_as_the_model_says(
        settings in any_settings().prop_filter("a valid budget", |s| s.model().is_ok()),
        max_attempts in 1..=4u32,
        calls in prop::collection::vec(prop::collection::vec(any_outcome(), 0..5), 1..25),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let policy = policy(max_attempts);
        let budget = settings.builder().build().unwrap();
        let breaker = CircuitBreaker::builder().build().unwrap();
        let mut model = settings.model().unwrap();
        runtime.block_on(async {
            for (i, script) in calls.iter().enumerate() {
                let real = drive(&policy, &budget, &breaker, script).await;
                let expected = model_call(&mut model, max_attempts, script);
                prop_assert_eq!(real, expected, "call {}: {:?}", i, script);
                prop_assert_eq!(u64::from(budget.available()), model.tokens, "call {}: {:?}", i, script);
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------------------------
// The cases, spelled out
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_call_that_needed_one_retry_costs_nothing_net() {
    let policy = policy(3);
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    let breaker = CircuitBreaker::builder().build().unwrap();
    let out = drive(&policy, &budget, &breaker, &[Outcome::Busy, Outcome::Ok]).await;
    assert_eq!(out, (Ok(1), 2));
    assert_eq!(budget.available(), 100, "AWS refunds the retry's 5 tokens");
    // Only the last retry's cost comes back: two retries cost one net.
    let out = drive(
        &policy,
        &budget,
        &breaker,
        &[Outcome::Busy, Outcome::Busy, Outcome::Ok],
    )
    .await;
    assert_eq!(out, (Ok(1), 3));
    assert_eq!(budget.available(), 95);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_costs_ten_by_default_whoever_noticed_it() {
    let policy = policy(2);
    let budget = RetryBudget::builder().build().unwrap();
    let breaker = CircuitBreaker::builder().build().unwrap();
    // Our own timeout cut the attempt.
    let out = drive(&policy, &budget, &breaker, &[Outcome::Hang, Outcome::Fatal]).await;
    assert_eq!(out, (Err(CallError::Fatal), 2));
    assert_eq!(budget.available(), 490);
    // The error says it was a timeout.
    let out = drive(
        &policy,
        &budget,
        &breaker,
        &[Outcome::ReadTimeout, Outcome::Fatal],
    )
    .await;
    assert_eq!(out, (Err(CallError::Fatal), 2));
    assert_eq!(budget.available(), 480);
    let out = drive(&policy, &budget, &breaker, &[Outcome::Busy, Outcome::Fatal]).await;
    assert_eq!(out, (Err(CallError::Fatal), 2));
    assert_eq!(budget.available(), 475);
}

#[tokio::test(start_paused = true)]
async fn a_returned_ok_that_retry_if_ok_rejected_deposits_nothing() {
    let policy = policy(2);
    let budget = RetryBudget::builder().max_tokens(100).build().unwrap();
    let breaker = CircuitBreaker::builder().build().unwrap();
    let out = drive(
        &policy,
        &budget,
        &breaker,
        &[Outcome::OkToRetry, Outcome::OkToRetry],
    )
    .await;
    assert_eq!(out, (Ok(0), 2));
    assert_eq!(budget.available(), 95, "paid for the retry, nothing back");
}

// The closure API: a retry paid for, then rejected by the breaker, is refunded, and the caller
// receives the last real error (as when the budget refuses the retry).
#[tokio::test(start_paused = true)]
async fn a_retry_the_breaker_rejects_costs_nothing_in_the_closure_api() {
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let budget = RetryBudget::builder().max_tokens(10).build().unwrap();
    let mut attempts = 0;
    let out: Result<(), CallError> = policy
        .retry(|| {
            attempts += 1;
            async { Err(CallError::Busy) }
        })
        .circuit_breaker(&breaker)
        .budget(&budget)
        .await;
    assert_eq!(
        out,
        Err(CallError::Busy),
        "the caller receives the last real error"
    );
    assert_eq!(attempts, 1, "the breaker opened at the first failure");
    assert_eq!(
        budget.available(),
        10,
        "the never-made attempt's retry is refunded"
    );
}
