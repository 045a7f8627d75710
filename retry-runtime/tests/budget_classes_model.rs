//! Model-based test of error classes through whole calls: the delays and the token accounting
//! of the presets (the AWS SDKs' standard mode before 2026 and from 2026, `DynamoDB`'s, with
//! `throttling_delay` and the budget's cost per class), against a reference model written from
//! the sources the presets cite (aws/aws-sdk-go-v2#3400, #3416):
//!
//! - a retry after an error of class `c` withdraws `cost(c)` (2026: 14 transient and timeout, 5
//!   throttling; before: 5, 10, 5); a bucket that cannot pay ends the call, taking nothing;
//! - it waits `base(c) × 2^(n−1)`, capped at 20 s (jitter off here: the presets' full jitter draws
//!   below that), where `base` is 50 ms (`DynamoDB` 25 ms) after a transient or timeout error and
//!   1 s after throttling (before 2026: 1 s for both);
//! - a call that succeeds after retrying gets its last retry's cost back; a first-try success
//!   deposits 1; both stop at 500.

use std::time::Duration;

use proptest::prelude::*;
use retry_runtime::{ErrorClass, Jitter, Preset, Transient, error_class};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Failure(ErrorClass);

impl Transient for Failure {
    fn is_transient(&self) -> bool {
        true
    }
    fn class(&self) -> ErrorClass {
        self.0
    }
}

impl From<retry_runtime::Elapsed> for Failure {
    fn from(_: retry_runtime::Elapsed) -> Self {
        Failure(ErrorClass::Timeout)
    }
}

/// One attempt's outcome: a failure of a class, or a success.
type Step = Option<ErrorClass>;

fn class() -> impl Strategy<Value = ErrorClass> {
    prop_oneof![
        Just(ErrorClass::Transient),
        Just(ErrorClass::Throttling),
        Just(ErrorClass::Timeout),
    ]
}

fn call_script() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![3 => class().prop_map(Some), 1 => Just(None)],
        1..6,
    )
}

/// The reference model of one preset.
struct Model {
    tokens: u32,
    max_attempts: u32,
    base: fn(ErrorClass) -> Duration,
    cost: fn(ErrorClass) -> u32,
}

impl Model {
    fn of(preset: Preset) -> Model {
        match preset {
            Preset::AwsStandard => Model {
                tokens: 500,
                max_attempts: 3,
                base: |_| Duration::from_secs(1),
                cost: |c| if c == ErrorClass::Timeout { 10 } else { 5 },
            },
            Preset::Aws2026 => Model {
                tokens: 500,
                max_attempts: 3,
                base: |c| {
                    if c == ErrorClass::Throttling {
                        Duration::from_secs(1)
                    } else {
                        Duration::from_millis(50)
                    }
                },
                cost: |c| if c == ErrorClass::Throttling { 5 } else { 14 },
            },
            _ => Model {
                tokens: 500,
                max_attempts: 4,
                base: |c| {
                    if c == ErrorClass::Throttling {
                        Duration::from_secs(1)
                    } else {
                        Duration::from_millis(25)
                    }
                },
                cost: |c| if c == ErrorClass::Throttling { 5 } else { 14 },
            },
        }
    }

    /// One call of `script` (repeated from its end if it runs out): the sleeps it makes.
    fn call(&mut self, script: &[Step]) -> Vec<Duration> {
        let mut sleeps = vec![];
        let mut paid: Option<ErrorClass> = None;
        for n in 1..=self.max_attempts {
            let step = script[(n as usize - 1).min(script.len() - 1)];
            match step {
                None => {
                    match paid {
                        None => self.tokens = (self.tokens + 1).min(500),
                        Some(c) => self.tokens = (self.tokens + (self.cost)(c)).min(500),
                    }
                    return sleeps;
                }
                Some(_) if n == self.max_attempts => return sleeps,
                Some(c) => {
                    let cost = (self.cost)(c);
                    if self.tokens < cost {
                        return sleeps;
                    }
                    self.tokens -= cost;
                    paid = Some(c);
                    let sleep = (self.base)(c) * 2u32.pow(n - 1);
                    sleeps.push(sleep.min(Duration::from_secs(20)));
                }
            }
        }
        sleeps
    }
}

fn preset() -> impl Strategy<Value = Preset> {
    prop_oneof![
        Just(Preset::AwsStandard),
        Just(Preset::Aws2026),
        Just(Preset::Aws2026DynamoDb)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn presets_delays_and_tokens_follow_their_sources(
        preset in preset(),
        calls in prop::collection::vec(call_script(), 1..40),
        drained in 0u32..480,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let policy = preset.policy().jitter(Jitter::None).build().unwrap();
        let budget = preset.budget().build().unwrap();
        let mut model = Model::of(preset);
        // Start part-drained, so that refusals happen.
        let mut left = drained;
        while left >= 5 && budget.try_withdraw_for(ErrorClass::Throttling) {
            left -= 5;
            model.tokens -= 5;
        }
        for script in &calls {
            let want = model.call(script);
            let mut sleeps = vec![];
            let mut attempt = 0usize;
            let out: Result<(), Failure> = rt.block_on(async {
                policy
                    .retry(|| {
                        let step = script[attempt.min(script.len() - 1)];
                        attempt += 1;
                        async move { step.map_or(Ok(()), |c| Err(Failure(c))) }
                    })
                    .error_class(error_class)
                    .on_retry(|_, _, d| sleeps.push(d))
                    .budget(&budget)
                    .await
            });
            let _ = out;
            prop_assert_eq!(&sleeps, &want, "{:?} {:?}", preset, script);
            prop_assert_eq!(budget.available(), model.tokens, "{:?} {:?}", preset, script);
        }
    }
}
