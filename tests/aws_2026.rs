//! The AWS SDKs' 2026 standard retries, to the letter: their own test vectors, run through this
//! crate's real drivers (the closure API, and the attribute with a run-time `policy`) on tokio's
//! paused clock, so that every delay is measured as the driver slept it.
//!
//! Sources (each case names its file and case):
//! - aws-sdk-go-v2 `aws/retry/retry2026_test.go`, `TestRetry2026StandardMode` (the table);
//! - botocore `tests/unit/retries/test_standard_retry_v2_1.py`;
//! - smithy-rs `rust-runtime/aws-smithy-runtime/src/client/retries/strategy/standard.rs` tests;
//! - smithy-typescript `packages/core/src/submodules/retry/util-retry/retries.integ.spec.ts`
//!   ("retry timings", the 2026 mixed-class cases).
//!
//! One place where the SDKs differ: after a *throttling* error that the empty quota refuses, a
//! long-polling call sleeps the throttling backoff (1 s) in botocore (`compute_retry_delay` of
//! the throttled context), smithy-rs (`long_polling_backoff_after_throttling_error_when_token_
//! bucket_empty`) and smithy-typescript (its `retryDelay` by error type), while Go's table
//! computes it with a nil error (50 ms). This crate waits the backoff that retry would have
//! used, as the three do; the Go row is ported with their value.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::LazyLock;
use std::time::Duration;

use http::HeaderMap;
use reattempt::{ErrorClass, Jitter, Preset, RetryBudget, RetryPolicy, Transient, retryable};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

/// botocore's `_THROTTLED_ERROR_CODES` (smithy-rs's `THROTTLING_ERRORS`).
const THROTTLING_CODES: [&str; 14] = [
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];

/// An AWS error response: its status, error code and headers; or a timeout.
#[derive(Debug, Clone)]
struct AwsError {
    status: u16,
    code: Option<&'static str>,
    headers: HeaderMap,
    timed_out: bool,
}

impl AwsError {
    fn hint(&self) -> Option<Duration> {
        reattempt::http::server_hint(&self.headers).delay
    }
}

/// A per-attempt timeout (the attribute's `policy` may hold one) is an SDK timeout error.
impl From<reattempt::Elapsed> for AwsError {
    fn from(_: reattempt::Elapsed) -> Self {
        AwsError {
            status: 0,
            code: None,
            headers: HeaderMap::new(),
            timed_out: true,
        }
    }
}

/// The SDKs' standard retry conditions: a transient status (500, 502, 503, 504), a throttling
/// or transient error code, or a timeout.
impl Transient for AwsError {
    fn is_transient(&self) -> bool {
        self.timed_out
            || matches!(self.status, 500 | 502 | 503 | 504)
            || self
                .code
                .is_some_and(|c| THROTTLING_CODES.contains(&c) || c == "RequestTimeout")
    }

    fn is_timeout(&self) -> bool {
        self.timed_out
    }

    fn class(&self) -> ErrorClass {
        if self.code.is_some_and(|c| THROTTLING_CODES.contains(&c)) {
            ErrorClass::Throttling
        } else if self.timed_out {
            ErrorClass::Timeout
        } else {
            ErrorClass::Transient
        }
    }
}

/// One response of a case's script: `status` (200 succeeds), an error code, an
/// `x-amz-retry-after` value.
#[derive(Debug, Clone, Copy)]
struct Response {
    status: u16,
    code: Option<&'static str>,
    retry_after: Option<&'static str>,
}

const fn status(status: u16) -> Response {
    Response {
        status,
        code: None,
        retry_after: None,
    }
}

const fn throttling() -> Response {
    Response {
        status: 400,
        code: Some("Throttling"),
        retry_after: None,
    }
}

const fn hinted(status: u16, retry_after: &'static str) -> Response {
    Response {
        status,
        code: None,
        retry_after: Some(retry_after),
    }
}

impl Response {
    fn outcome(self) -> Result<u16, AwsError> {
        if (200..300).contains(&self.status) {
            return Ok(self.status);
        }
        let mut headers = HeaderMap::new();
        if let Some(v) = self.retry_after {
            headers.insert("x-amz-retry-after", v.parse().unwrap());
        }
        Err(AwsError {
            status: self.status,
            code: self.code,
            headers,
            timed_out: self.status == 0,
        })
    }
}

/// What the SDK does after a response (Go's `retryOutcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Success,
    RetryRequest,
    MaxAttemptsExceeded,
    RetryQuotaExceeded,
    FailRequest,
}
use Outcome::*;

/// A step: the response, what follows it, the quota after it, and the wait after it (the
/// retry's delay, or a long-polling call's wait before it returns; zero when it returns at once).
type Step = (Response, Outcome, u32, Duration);

struct Case {
    /// The source's file and case.
    name: &'static str,
    preset: Preset,
    max_attempts: Option<u32>,
    initial_tokens: Option<u32>,
    /// The SDK's `exponentialBase` of 1 (no jitter); `false`: the SDK's random jitter.
    fixed_base: bool,
    max_backoff: Option<Duration>,
    long_polling: bool,
    steps: Vec<Step>,
}

impl Case {
    fn new(name: &'static str, steps: Vec<Step>) -> Self {
        Case {
            name,
            preset: Preset::Aws2026,
            max_attempts: None,
            initial_tokens: None,
            fixed_base: true,
            max_backoff: None,
            long_polling: false,
            steps,
        }
    }

    fn policy(&self) -> RetryPolicy {
        let mut b = self.preset.policy().long_polling(self.long_polling);
        if self.fixed_base {
            b = b.jitter(Jitter::None);
        }
        if let Some(n) = self.max_attempts {
            b = b.max_attempts(n);
        }
        if let Some(d) = self.max_backoff {
            b = b.max_delay(d);
        }
        b.build().unwrap()
    }

    fn budget(&self) -> RetryBudget {
        let b = self.preset.budget();
        match self.initial_tokens {
            Some(n) => b.initial_tokens(n),
            None => b,
        }
        .build()
        .unwrap()
    }
}

/// Runs a case's script through the closure API, call after call (a success ends a call, as
/// in the SDKs' tables), and gives what was observed of each response, as its step says it.
async fn run(case: &Case) -> Vec<(Outcome, u32, Duration)> {
    let policy = case.policy();
    let budget = case.budget();
    let script = RefCell::new(case.steps.iter().map(|s| s.0).collect::<VecDeque<_>>());
    let mut seen = vec![];
    while !script.borrow().is_empty() {
        let starts = RefCell::new(Vec::new());
        let quotas = RefCell::new(Vec::new());
        let last = Cell::new(None);
        let out = policy
            .retry(|| {
                starts.borrow_mut().push(Instant::now());
                let response = script.borrow_mut().pop_front().expect("the script ran out");
                last.set(Some(response));
                async move { response.outcome() }
            })
            .without_timeout()
            .retry_if(reattempt::transient)
            .error_class(reattempt::error_class)
            .retry_after(AwsError::hint)
            .budget(&budget)
            .long_polling_wait()
            .on_retry(|_, _, _| quotas.borrow_mut().push(budget.available()))
            .await;
        let end = Instant::now();
        let starts = starts.into_inner();
        let quotas = quotas.into_inner();
        for (i, quota) in quotas.iter().enumerate() {
            seen.push((RetryRequest, *quota, starts[i + 1] - starts[i]));
        }
        let outcome = match &out {
            Ok(_) => Success,
            Err(e) if !e.is_transient() => FailRequest,
            Err(_) if u32::try_from(starts.len()) == Ok(policy.max_attempts()) => {
                MaxAttemptsExceeded
            }
            Err(_) => RetryQuotaExceeded,
        };
        seen.push((outcome, budget.available(), end - starts[starts.len() - 1]));
        assert!(last.get().is_some());
    }
    seen
}

async fn check(case: Case) {
    let seen = run(&case).await;
    let want: Vec<_> = case.steps.iter().map(|s| (s.1, s.2, s.3)).collect();
    assert_eq!(seen, want, "{}", case.name);
}

const Z: Duration = Duration::ZERO;

/// aws-sdk-go-v2 `retry2026_test.go`, `TestRetry2026StandardMode`: every case of the table, in
/// order (the throttling long-polling row with the other SDKs' 1 s: see the module's doc).
#[allow(clippy::too_many_lines, reason = "the source's table, case by case")]
fn go_table() -> Vec<Case> {
    vec![
        Case::new(
            "go: retry eventually succeeds",
            vec![
                (status(500), RetryRequest, 486, 50 * MS),
                (status(500), RetryRequest, 472, 100 * MS),
                (status(200), Success, 486, Z),
            ],
        ),
        Case::new(
            "go: fail due to max attempts reached",
            vec![
                (status(502), RetryRequest, 486, 50 * MS),
                (status(502), RetryRequest, 472, 100 * MS),
                (status(502), MaxAttemptsExceeded, 472, Z),
            ],
        ),
        Case {
            initial_tokens: Some(14),
            ..Case::new(
                "go: retry quota reached after a single retry",
                vec![
                    (status(500), RetryRequest, 0, 50 * MS),
                    (status(500), RetryQuotaExceeded, 0, Z),
                ],
            )
        },
        Case {
            initial_tokens: Some(0),
            ..Case::new(
                "go: no retries at all if retry quota is 0",
                vec![(status(500), RetryQuotaExceeded, 0, Z)],
            )
        },
        Case {
            max_attempts: Some(5),
            ..Case::new(
                "go: verifying exponential backoff timing",
                vec![
                    (status(500), RetryRequest, 486, 50 * MS),
                    (status(500), RetryRequest, 472, 100 * MS),
                    (status(500), RetryRequest, 458, 200 * MS),
                    (status(500), RetryRequest, 444, 400 * MS),
                    (status(500), MaxAttemptsExceeded, 444, Z),
                ],
            )
        },
        Case {
            max_attempts: Some(5),
            max_backoff: Some(200 * MS),
            ..Case::new(
                "go: verify max backoff time",
                vec![
                    (status(500), RetryRequest, 486, 50 * MS),
                    (status(500), RetryRequest, 472, 100 * MS),
                    (status(500), RetryRequest, 458, 200 * MS),
                    (status(500), RetryRequest, 444, 200 * MS),
                    (status(500), MaxAttemptsExceeded, 444, Z),
                ],
            )
        },
        Case {
            max_attempts: Some(5),
            initial_tokens: Some(20),
            ..Case::new(
                "go: retry stops after retry quota exhaustion",
                vec![
                    (status(500), RetryRequest, 6, 50 * MS),
                    (status(502), RetryQuotaExceeded, 6, Z),
                ],
            )
        },
        Case {
            max_attempts: Some(5),
            initial_tokens: Some(30),
            ..Case::new(
                "go: retry quota recovery after successful responses",
                vec![
                    (status(500), RetryRequest, 16, 50 * MS),
                    (status(502), RetryRequest, 2, 100 * MS),
                    (status(200), Success, 16, Z),
                    (status(500), RetryRequest, 2, 50 * MS),
                    (status(200), Success, 16, Z),
                ],
            )
        },
        Case::new(
            "go: throttling error token bucket drain and backoff duration",
            vec![
                (throttling(), RetryRequest, 495, 1000 * MS),
                (status(200), Success, 500, Z),
            ],
        ),
        Case {
            preset: Preset::Aws2026DynamoDb,
            ..Case::new(
                "go: dynamodb base backoff and increased retries",
                vec![
                    (status(500), RetryRequest, 486, 25 * MS),
                    (status(500), RetryRequest, 472, 50 * MS),
                    (status(500), RetryRequest, 458, 100 * MS),
                    (status(500), MaxAttemptsExceeded, 458, Z),
                ],
            )
        },
        Case {
            long_polling: true,
            initial_tokens: Some(0),
            ..Case::new(
                "go: long-polling backoff when token bucket empty",
                vec![(status(500), RetryQuotaExceeded, 0, 50 * MS)],
            )
        },
        Case {
            long_polling: true,
            initial_tokens: Some(0),
            ..Case::new(
                "go: long-polling backoff after throttling error when token bucket empty \
                 (smithy-rs, botocore, smithy-typescript: the throttling backoff)",
                vec![(throttling(), RetryQuotaExceeded, 0, 1000 * MS)],
            )
        },
        Case {
            long_polling: true,
            max_attempts: Some(2),
            ..Case::new(
                "go: long-polling max attempts exceeded must not delay",
                vec![
                    (status(500), RetryRequest, 486, 50 * MS),
                    (status(500), MaxAttemptsExceeded, 486, Z),
                ],
            )
        },
        Case {
            long_polling: true,
            max_attempts: Some(2),
            ..Case::new(
                "go: long-polling success must not delay",
                vec![
                    (status(500), RetryRequest, 486, 50 * MS),
                    (status(200), Success, 500, Z),
                ],
            )
        },
        Case {
            long_polling: true,
            max_attempts: Some(2),
            ..Case::new(
                "go: long-polling non-retriable errors must not delay",
                vec![(status(404), FailRequest, 500, Z)],
            )
        },
        Case {
            fixed_base: false,
            ..Case::new(
                "go: honor x-amz-retry-after header (random jitter: the hint decides)",
                vec![
                    (hinted(500, "1500"), RetryRequest, 486, 1500 * MS),
                    (status(200), Success, 500, Z),
                ],
            )
        },
        Case::new(
            "go: x-amz-retry-after minimum is exponential backoff duration",
            vec![
                (hinted(500, "0"), RetryRequest, 486, 50 * MS),
                (status(200), Success, 500, Z),
            ],
        ),
        Case::new(
            "go: x-amz-retry-after maximum is 5+exponential backoff duration",
            vec![
                (hinted(500, "10000"), RetryRequest, 486, 5050 * MS),
                (status(200), Success, 500, Z),
            ],
        ),
        Case::new(
            "go: invalid x-amz-retry-after falls back to exponential backoff",
            vec![
                (hinted(500, "invalid"), RetryRequest, 486, 50 * MS),
                (status(200), Success, 500, Z),
            ],
        ),
    ]
}

#[tokio::test(start_paused = true)]
async fn go_retry2026_table() {
    let table = go_table();
    assert_eq!(table.len(), 19, "every case of TestRetry2026StandardMode");
    for case in table {
        check(case).await;
    }
}

/// botocore `test_standard_retry_v2_1.py`: `TestRetryAfterHeaderInRetries`
/// (`test_x_amz_retry_after_header_is_honored`, all five rows), the overflowing value of
/// issue 37, and a hint between `MAX_BACKOFF` and 25 s (clamped, not a give-up).
#[tokio::test(start_paused = true)]
async fn botocore_x_amz_retry_after_rows() {
    let rows = [
        ("1500", 1500 * MS),
        ("0", 50 * MS),
        ("10000", 5050 * MS),
        ("invalid", 50 * MS),
        ("-100", 50 * MS),
        ("9223372036854775807", 50 * MS),
        ("22000", 5050 * MS),
    ];
    for (value, delay) in rows {
        check(Case::new(
            "botocore: test_x_amz_retry_after_header_is_honored",
            vec![
                (hinted(500, value), RetryRequest, 486, delay),
                (status(200), Success, 500, Z),
            ],
        ))
        .await;
    }
}

/// botocore `TestRetryQuotaChecker` (2026): a throttling retry costs 5, any other 14, a timeout
/// too (`test_can_acquire_quota_for_timeout_error`); what a retried call's success gives back;
/// `test_acquire_quota_fails` (14 tokens pay one retry); `test_quota_reached_adds_retry_metadata`
/// (0 tokens); `TestServiceSpecificRetries.test_dynamodb_base_backoff_and_increased_retries`.
#[tokio::test(start_paused = true)]
async fn botocore_quota_checker() {
    let timeout = Response {
        status: 0,
        code: None,
        retry_after: None,
    };
    check(Case::new(
        "botocore: test_can_acquire_quota_for_timeout_error",
        vec![
            (timeout, RetryRequest, 486, 50 * MS),
            (status(200), Success, 500, Z),
        ],
    ))
    .await;
    check(Case::new(
        "botocore: test_can_release_quota_when_succeed_after_throttling_error",
        vec![
            (throttling(), RetryRequest, 495, 1000 * MS),
            (status(200), Success, 500, Z),
        ],
    ))
    .await;
    check(Case::new(
        "botocore: test_dont_release_quota_if_all_retries_failed",
        vec![
            (status(500), RetryRequest, 486, 50 * MS),
            (status(500), RetryRequest, 472, 100 * MS),
            (status(500), MaxAttemptsExceeded, 472, Z),
        ],
    ))
    .await;
    check(Case {
        initial_tokens: Some(14),
        ..Case::new(
            "botocore: test_acquire_quota_fails",
            vec![
                (status(500), RetryRequest, 0, 50 * MS),
                (status(500), RetryQuotaExceeded, 0, Z),
            ],
        )
    })
    .await;
    check(Case {
        initial_tokens: Some(0),
        ..Case::new(
            "botocore: test_quota_reached_adds_retry_metadata",
            vec![(status(500), RetryQuotaExceeded, 0, Z)],
        )
    })
    .await;
    // `test_sqs_triggers_long_polling_backoff_when_token_empty` /
    // `test_non_long_polling_operation_does_not_sleep_when_quota_exhausted`.
    for (long_polling, wait) in [(true, 50 * MS), (false, Z)] {
        check(Case {
            initial_tokens: Some(0),
            long_polling,
            ..Case::new(
                "botocore: long polling (ReceiveMessage) sleeps; SendMessage does not",
                vec![(status(500), RetryQuotaExceeded, 0, wait)],
            )
        })
        .await;
    }
}

/// smithy-rs `standard.rs` (2.1 tests): `v2_1_retry_after_bounded_between_t_i_and_t_i_plus_5s`
/// (3 s), `v2_1_retry_after_below_t_i_uses_t_i` (10 ms → 50 ms),
/// `v2_1_retry_after_above_t_i_plus_5s_capped` (10 s → 5.05 s), `retry_quota_reached_after_
/// single_retry`, `no_retries_if_retry_quota_is_zero`, `retry_stops_after_retry_quota_exhaustion`,
/// `retry_quota_recovery_after_successful_responses`, `throttling_error_token_bucket_drain_and_
/// backoff`, `long_polling_backs_off_when_token_bucket_empty`, `long_polling_backoff_after_
/// throttling_error_when_token_bucket_empty`, `long_polling_max_attempts_exceeded_must_not_delay`,
/// `long_polling_success_must_not_delay`, `long_polling_non_retryable_errors_must_not_delay`,
/// `non_long_polling_no_backoff_when_token_bucket_empty`, `verify_max_backoff_time`.
#[tokio::test(start_paused = true)]
async fn smithy_rs_standard_rs_v2_1() {
    for (hint, delay) in [("3000", 3000 * MS), ("10", 50 * MS), ("10000", 5050 * MS)] {
        check(Case::new(
            "smithy-rs: v2_1_retry_after_*",
            vec![
                (hinted(500, hint), RetryRequest, 486, delay),
                (status(200), Success, 500, Z),
            ],
        ))
        .await;
    }
    check(Case {
        max_attempts: Some(5),
        initial_tokens: Some(14),
        ..Case::new(
            "smithy-rs: retry_quota_reached_after_single_retry",
            vec![
                (status(500), RetryRequest, 0, 50 * MS),
                (status(500), RetryQuotaExceeded, 0, Z),
            ],
        )
    })
    .await;
    check(Case {
        long_polling: true,
        max_attempts: Some(5),
        initial_tokens: Some(0),
        ..Case::new(
            "smithy-rs: long_polling_backoff_after_throttling_error_when_token_bucket_empty",
            vec![(throttling(), RetryQuotaExceeded, 0, 1000 * MS)],
        )
    })
    .await;
    check(Case {
        max_attempts: Some(5),
        initial_tokens: Some(0),
        ..Case::new(
            "smithy-rs: non_long_polling_no_backoff_when_token_bucket_empty",
            vec![(status(500), RetryQuotaExceeded, 0, Z)],
        )
    })
    .await;
    check(Case {
        max_attempts: Some(5),
        max_backoff: Some(200 * MS),
        ..Case::new(
            "smithy-rs: verify_max_backoff_time",
            vec![
                (status(500), RetryRequest, 486, 50 * MS),
                (status(500), RetryRequest, 472, 100 * MS),
                (status(500), RetryRequest, 458, 200 * MS),
                (status(500), RetryRequest, 444, 200 * MS),
                (status(500), MaxAttemptsExceeded, 444, Z),
            ],
        )
    })
    .await;
}

/// smithy-typescript `retries.integ.spec.ts`, "retry timings" (2026): mixed classes in one call,
/// each retry's delay from its own class's base at its attempt's exponent (1 s × 2ⁿ after
/// throttling, 50 ms × 2ⁿ otherwise, capped at 20 s), each paid its class's cost; the quota
/// after the last retry is 500 minus the costs.
#[tokio::test(start_paused = true)]
async fn smithy_typescript_mixed_class_timings() {
    use ErrorClass::{Throttling as H, Transient as T};
    // Each case: its name, each retry's class and delay (ms), whether the call long-polls.
    type Timings<'a> = (&'a str, &'a [(ErrorClass, u64)], bool);
    let cases: [Timings<'_>; 3] = [
        (
            "8x - transient mixed (2026)",
            &[
                (H, 1000),
                (H, 2000),
                (T, 200),
                (T, 400),
                (T, 800),
                (T, 1600),
                (H, 20000),
            ],
            false,
        ),
        (
            "8x - throttling mixed (2026)",
            &[
                (T, 50),
                (H, 2000),
                (H, 4000),
                (H, 8000),
                (H, 16000),
                (T, 1600),
                (H, 20000),
            ],
            false,
        ),
        (
            "12x - throttling mixed longpoll (2026)",
            &[
                (T, 50),
                (H, 2000),
                (H, 4000),
                (H, 8000),
                (H, 16000),
                (T, 1600),
                (H, 20000),
                (H, 20000),
                (H, 20000),
                (H, 20000),
                (H, 20000),
            ],
            true,
        ),
    ];
    for (name, retries, long_polling) in cases {
        let steps = retries
            .iter()
            .enumerate()
            .map(|(i, (class, ms))| {
                let response = if *class == H {
                    throttling()
                } else {
                    status(500)
                };
                let cost: u32 = retries[..=i]
                    .iter()
                    .map(|(c, _)| if *c == H { 5 } else { 14 })
                    .sum();
                (
                    response,
                    RetryRequest,
                    500 - cost,
                    Duration::from_millis(*ms),
                )
            })
            .chain([(
                status(200),
                Success,
                {
                    let cost: u32 = retries
                        .iter()
                        .map(|(c, _)| if *c == H { 5 } else { 14 })
                        .sum();
                    let last = if retries[retries.len() - 1].0 == H {
                        5
                    } else {
                        14
                    };
                    500 - cost + last
                },
                Z,
            )])
            .collect();
        check(Case {
            max_attempts: Some(u32::try_from(retries.len()).unwrap() + 1),
            long_polling,
            ..Case::new(name, steps)
        })
        .await;
    }
}

// ---------------------------------------------------------------------------------------------
// The attribute, with a run-time policy (its `policy` key takes a built policy): the same rules.

static POLLING: RetryPolicy = match Preset::Aws2026
    .policy()
    .jitter(Jitter::None)
    .long_polling(true)
    .build()
{
    Ok(p) => p,
    Err(_) => panic!("invalid policy"),
};

static EMPTY: LazyLock<RetryBudget> =
    LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());

thread_local! {
    static SCRIPT: RefCell<VecDeque<Response>> = const { RefCell::new(VecDeque::new()) };
}

fn next_response() -> Result<u16, AwsError> {
    SCRIPT
        .with(|s| s.borrow_mut().pop_front().expect("the script ran out"))
        .outcome()
}

#[retryable(
    policy = POLLING,
    budget = *EMPTY,
    retry_if = reattempt::transient,
    retry_after = AwsError::hint
)]
async fn receive_message() -> Result<u16, AwsError> {
    next_response()
}

/// SQS `ReceiveMessage` under the attribute: the empty quota refuses the retry, and the call
/// waits the backoff it would have used before it returns (50 ms; 1 s after throttling, its
/// class read from `Transient::class`); no wait on success or on an error it does not retry.
#[tokio::test(start_paused = true)]
async fn the_attribute_long_polls_with_a_policy() {
    for (response, wait) in [
        (status(500), 50 * MS),
        (throttling(), 1000 * MS),
        (hinted(503, "2000"), 2000 * MS),
        (status(404), Z),
        (status(200), Z),
    ] {
        SCRIPT.with(|s| s.borrow_mut().push_back(response));
        let t0 = Instant::now();
        let out = receive_message().await;
        assert_eq!(out.is_ok(), response.status == 200, "{response:?}");
        assert_eq!(t0.elapsed(), wait, "{response:?}");
        let deposited = u32::from(response.status == 200);
        assert_eq!(
            EMPTY.available(),
            deposited,
            "nothing paid; a first-try success deposits 1"
        );
    }
}

/// The tower layer's HTTP classification: a 503 (or a throttling 429) the empty quota refuses
/// is returned after the backoff its retry would have used; a 404 and a 200 at once.
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn the_tower_layer_long_polls() {
    use std::sync::Arc;
    use tower::{Layer, ServiceExt, service_fn};

    for (status, wait) in [(503, 50 * MS), (429, 1000 * MS), (404, Z), (200, Z)] {
        let budget = Arc::new(Preset::Aws2026.budget().initial_tokens(0).build().unwrap());
        let svc = service_fn(move |_: http::Request<String>| async move {
            let mut r = http::Response::new(String::new());
            *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
            Ok::<_, std::convert::Infallible>(r)
        });
        let client = reattempt::tower::RetryLayer::new(POLLING.clone())
            .http()
            .without_timeout()
            .budget(budget)
            .layer(svc);
        let t0 = Instant::now();
        let r = client
            .oneshot(http::Request::new(String::new()))
            .await
            .unwrap();
        assert_eq!(r.status(), status);
        assert_eq!(t0.elapsed(), wait, "{status}");
    }
}

// The attribute's own loop (a function whose attempts cannot overlap: an owned argument, or a
// blocking `fn`), with a run-time policy and a budget: the same wait before it returns.

static EMPTY_LOOP: LazyLock<RetryBudget> =
    LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());

#[retryable(
    policy = POLLING,
    budget = *EMPTY_LOOP,
    retry_if = reattempt::transient,
    retry_after = AwsError::hint
)]
async fn receive_from(queue: String) -> Result<u16, AwsError> {
    assert_eq!(queue, "orders");
    next_response()
}

#[tokio::test(start_paused = true)]
async fn the_attribute_loop_long_polls() {
    for (response, wait) in [
        (status(500), 50 * MS),
        (throttling(), 1000 * MS),
        (status(404), Z),
    ] {
        SCRIPT.with(|s| s.borrow_mut().push_back(response));
        let t0 = Instant::now();
        assert!(receive_from("orders".to_owned()).await.is_err());
        assert_eq!(t0.elapsed(), wait, "{response:?}");
    }
}

static EMPTY_BLOCKING: LazyLock<RetryBudget> =
    LazyLock::new(|| Preset::Aws2026.budget().initial_tokens(0).build().unwrap());

#[retryable(policy = POLLING, budget = *EMPTY_BLOCKING, retry_if = reattempt::transient)]
fn receive_blocking() -> Result<u16, AwsError> {
    next_response()
}

/// A blocking function sleeps the wait on the thread (on the test clock here: no real time).
#[cfg(feature = "testing")]
#[test]
fn a_blocking_attribute_long_polls() {
    SCRIPT.with(|s| s.borrow_mut().push_back(status(503)));
    let took = reattempt::testing::with_test_clock(|| {
        let t0 = Instant::now();
        assert!(receive_blocking().is_err());
        t0.elapsed()
    });
    assert_eq!(took, 50 * MS);
}

#[cfg(not(feature = "testing"))]
#[test]
fn a_blocking_attribute_with_a_budget_compiles() {
    SCRIPT.with(|s| s.borrow_mut().push_back(status(404)));
    assert!(receive_blocking().is_err(), "not retried: no wait");
}
