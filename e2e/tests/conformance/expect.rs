//! A scenario and its expected outcome, written from the engine's documented rules (README,
//! `retry-runtime`'s `Engine::after_failure_within`, `decide`, `Guards`, `events`), never copied
//! from a driver's output.

use reattempt::{BreakerState, GiveUpReason};

use crate::model::{
    AttemptSeen, BREAKER, BreakerSeen, BreakerSpec, BreakerStart, BudgetSpec, BulkheadSpec,
    CallResult, Ev, FaultSpec, Inherited, Metrics, Observed, PolicySpec, RetrySeen, Step,
    TestError, ThrottleSpec,
};

/// The name every driver gives the call (`name = "…"`, `.name(…)`).
pub const NAME: &str = "conformance";

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub policy: PolicySpec,
    pub script: Vec<Step>,
    pub breaker: Option<BreakerSpec>,
    pub budget: Option<BudgetSpec>,
    pub throttle: Option<ThrottleSpec>,
    pub bulkhead: Option<BulkheadSpec>,
    pub inherited: Option<Inherited>,
    /// Drop the call's future after this many ms.
    pub cancel_at_ms: Option<u64>,
    pub expected: Expected,
}

/// What the engine's rules say the run shows.
#[derive(Debug, Clone)]
pub struct Expected {
    pub result: CallResult,
    pub attempts: Vec<AttemptSeen>,
    pub on_retry: Vec<RetrySeen>,
    pub events: Vec<Ev>,
    pub breaker: Option<BreakerSeen>,
    pub budget: Option<u32>,
    pub throttle: Option<(u64, u64)>,
    pub bulkhead: Option<u32>,
    pub ended_ms: u64,
}

impl Scenario {
    /// A row with the default schedule: 3 attempts, 100 ms ×2 up to 10 s, no jitter, no
    /// timeout, no `max_elapsed`.
    pub fn new(name: &'static str) -> Self {
        Scenario {
            name,
            policy: PolicySpec {
                max_attempts: 3,
                delay_ms: 100,
                throttling_delay_ms: None,
                max_delay_ms: 10_000,
                timeout_ms: None,
                max_elapsed_ms: None,
                hedge_after_ms: None,
                one_layer: false,
                long_polling: false,
                idempotent: None,
                faults: None,
            },
            script: vec![],
            breaker: None,
            budget: None,
            throttle: None,
            bulkhead: None,
            inherited: None,
            cancel_at_ms: None,
            expected: Expected {
                result: CallResult::Cancelled,
                attempts: vec![],
                on_retry: vec![],
                events: vec![],
                breaker: None,
                budget: None,
                throttle: None,
                bulkhead: None,
                ended_ms: 0,
            },
        }
    }
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.policy.max_attempts = n;
        self
    }
    pub fn max_delay(mut self, ms: u64) -> Self {
        self.policy.max_delay_ms = ms;
        self
    }
    pub fn timeout(mut self, ms: u64) -> Self {
        self.policy.timeout_ms = Some(ms);
        self
    }
    pub fn max_elapsed(mut self, ms: u64) -> Self {
        self.policy.max_elapsed_ms = Some(ms);
        self
    }
    pub fn hedge_after(mut self, ms: u64) -> Self {
        self.policy.hedge_after_ms = Some(ms);
        self
    }
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.policy.idempotent = Some(idempotent);
        self
    }
    /// Fault injection: `rate` of injected errors, `latency_ms` added to each injected attempt
    /// (and to `latency_rate` of the others), drawn from `seed` (feature `testing`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn inject_faults(
        mut self,
        rate: f64,
        latency_ms: Option<u64>,
        latency_rate: f64,
        seed: u64,
    ) -> Self {
        self.policy.faults = Some(FaultSpec {
            rate,
            latency_ms,
            latency_rate,
            seed,
        });
        self
    }
    pub fn script(mut self, steps: impl IntoIterator<Item = Step>) -> Self {
        self.script = steps.into_iter().collect();
        self
    }
    pub fn breaker(mut self, start: BreakerStart, failure_threshold: u32, probes: u32) -> Self {
        self.breaker = Some(BreakerSpec {
            failure_threshold,
            reset_ms: 30_000,
            probes,
            start,
        });
        self
    }
    /// A budget of `max_tokens`, 5 per retry, 10 per retry after a timeout, 1 back per first-try
    /// success, holding `start` tokens.
    pub fn budget(mut self, max_tokens: u32, start: u32) -> Self {
        self.budget = Some(BudgetSpec {
            max_tokens,
            retry_cost: 5,
            timeout_cost: 10,
            throttling_cost: 5,
            deposit: 1,
            start,
        });
        self
    }
    /// The budget's cost of a retry after throttling (set after [`budget`](Self::budget)).
    pub fn throttling_cost(mut self, cost: u32) -> Self {
        self.budget
            .as_mut()
            .expect("a budget first")
            .throttling_cost = cost;
        self
    }
    pub fn throttling_delay(mut self, ms: u64) -> Self {
        self.policy.throttling_delay_ms = Some(ms);
        self
    }
    /// An adaptive throttle (K = 1) that counted `requests` requests and no accept, its draws
    /// seeded with `seed`.
    pub fn throttle(mut self, requests: u32, seed: u64) -> Self {
        self.throttle = Some(ThrottleSpec { requests, seed });
        self
    }
    /// A bulkhead of one slot, held by another call until `held_ms` (if any), with `max_wait`.
    pub fn bulkhead(mut self, max_wait_ms: Option<u64>, held_ms: Option<u64>) -> Self {
        self.bulkhead = Some(BulkheadSpec {
            max_wait_ms,
            held_ms,
        });
        self
    }
    pub fn inherited(mut self, max_elapsed_ms: u64, spent_ms: u64) -> Self {
        self.inherited = Some(Inherited {
            max_elapsed_ms: Some(max_elapsed_ms),
            spent_ms,
            outer_max_attempts: 1,
        });
        self
    }
    pub fn one_layer(mut self) -> Self {
        self.policy.one_layer = true;
        self
    }
    pub fn long_polling(mut self) -> Self {
        self.policy.long_polling = true;
        self
    }
    /// The call runs in the first attempt of an outer call of `outer_max_attempts` (no
    /// `max_elapsed`): 1, its last; more, it has attempts left.
    pub fn nested_in(mut self, outer_max_attempts: u32) -> Self {
        self.inherited = Some(Inherited {
            max_elapsed_ms: None,
            spent_ms: 0,
            outer_max_attempts,
        });
        self
    }
    pub fn cancel_at(mut self, ms: u64) -> Self {
        self.cancel_at_ms = Some(ms);
        self
    }

    // The expectation.

    pub fn returns(mut self, r: Result<u32, TestError>) -> Self {
        self.expected.result = CallResult::Returned(r);
        self
    }
    pub fn cancelled(mut self) -> Self {
        self.expected.result = CallResult::Cancelled;
        self
    }
    /// The attempts the body ran: (start ms, `context().attempt()`).
    pub fn attempts(mut self, a: impl IntoIterator<Item = AttemptSeen>) -> Self {
        self.expected.attempts = a.into_iter().collect();
        self
    }
    pub fn on_retry(mut self, r: impl IntoIterator<Item = RetrySeen>) -> Self {
        self.expected.on_retry = r.into_iter().collect();
        self
    }
    pub fn events(mut self, e: impl IntoIterator<Item = Ev>) -> Self {
        self.expected.events = e.into_iter().collect();
        self
    }
    pub fn breaker_after(mut self, state: BreakerState, admits: bool) -> Self {
        self.expected.breaker = Some((state, admits));
        self
    }
    pub fn throttle_after(mut self, requests: u64, accepts: u64) -> Self {
        self.expected.throttle = Some((requests, accepts));
        self
    }
    pub fn bulkhead_after(mut self, in_flight: u32) -> Self {
        self.expected.bulkhead = Some(in_flight);
        self
    }
    pub fn budget_after(mut self, tokens: u32) -> Self {
        self.expected.budget = Some(tokens);
        self
    }
    pub fn ends_at(mut self, ms: u64) -> Self {
        self.expected.ended_ms = ms;
        self
    }

    /// Whether the cancellation point falls while an attempt runs (rather than in a sleep):
    /// the last attempt seen never ended.
    fn cancelled_during_attempt(&self) -> bool {
        self.expected.result == CallResult::Cancelled
            && self.expected.attempts.len() > self.expected.on_retry.len() + self.retried_oks()
    }

    fn retried_oks(&self) -> usize {
        self.expected
            .events
            .iter()
            .filter(|e| e.message == RETRYING_OK)
            .count()
    }

    /// The expected observation. Metrics follow from the rest by the documented meaning of each
    /// metric (`retry-runtime/src/engine/events.rs`): `attempts_total` counts attempts that
    /// ended (an attempt cut by a cancellation never reports); `calls_total` one outcome per call
    /// that returned (`successful`/`failed` by the result, an `Ok` returned because retries ran
    /// out being failed; `with_retry` when more than one attempt was made); a rejection, a
    /// budget refusal and a `one_layer` deferral count once each; the histogram holds each retry's delay.
    /// An attempt fault injection kept from the body (an injected error, a latency past its
    /// timeout) is an attempt that ended all the same, and `injected_faults_total` counts each
    /// injected event by its `kind`.
    pub fn observed(&self, with_metrics: bool) -> Observed {
        let x = &self.expected;
        let metrics = with_metrics.then(|| {
            let injected = |kind: &str| {
                x.events
                    .iter()
                    .filter(|e| e.message == INJECTED && e.field("kind") == Some(kind))
                    .count() as u64
            };
            // The attempts made: those the body saw, and those fault injection kept from it (an
            // injected error, a latency past the attempt's timeout), by their numbers.
            let mut numbers: Vec<u32> = x
                .attempts
                .iter()
                .map(|a| a.1)
                .chain(
                    x.events
                        .iter()
                        .filter(|e| e.message == INJECTED)
                        .filter_map(|e| e.field("attempt")?.parse().ok()),
                )
                .collect();
            numbers.sort_unstable();
            numbers.dedup();
            let made = numbers.len() as u64;
            let mut m = Metrics {
                attempts: made - u64::from(self.cancelled_during_attempt()),
                ..Metrics::default()
            };
            let gave_up = |reason: GiveUpReason| {
                x.events
                    .iter()
                    .any(|e| e.field("reason") == Some(reason.to_string().as_str()))
            };
            if let CallResult::Returned(r) = x.result {
                // An `Ok` handed back because no retry was left is a failed call.
                let succeeded = r.is_ok() && !x.events.iter().any(|e| e.message == GAVE_UP_OK);
                let outcome = match (succeeded, made > 1) {
                    (true, false) => "successful_without_retry",
                    (true, true) => "successful_with_retry",
                    (false, false) => "failed_without_retry",
                    (false, true) => "failed_with_retry",
                };
                m.calls = vec![(outcome.to_owned(), 1)];
            }
            m.breaker_rejections = u64::from(gave_up(GiveUpReason::BreakerOpen));
            m.budget_refusals = u64::from(gave_up(GiveUpReason::BudgetExhausted));
            m.one_layer_deferrals = u64::from(gave_up(GiveUpReason::OuterRetries));
            m.unknown_outcome_refusals = u64::from(gave_up(GiveUpReason::UnknownOutcome));
            m.throttle_rejections = u64::from(gave_up(GiveUpReason::Throttled));
            m.bulkhead_rejections = u64::from(gave_up(GiveUpReason::BulkheadFull));
            m.injected = ["error", "latency"]
                .into_iter()
                .map(|kind| (kind.to_owned(), injected(kind)))
                .filter(|(_, n)| *n > 0)
                .collect();
            m.delays_ms = x
                .events
                .iter()
                .filter_map(|e| e.field("delay"))
                .map(|d| {
                    d.strip_suffix("ms")
                        .and_then(|n| n.parse().ok())
                        .or_else(|| {
                            d.strip_suffix('s')
                                .and_then(|n| n.parse::<u64>().ok())
                                .map(|s| s * 1000)
                        })
                        .unwrap_or_else(|| panic!("delay {d} in ms or whole s"))
                })
                .collect();
            m
        });
        Observed {
            result: x.result,
            attempts: x.attempts.clone(),
            one_key: true,
            on_retry: x.on_retry.clone(),
            events: x.events.clone(),
            breaker: x.breaker,
            budget: x.budget,
            throttle: x.throttle,
            bulkhead: x.bulkhead,
            ended_ms: x.ended_ms,
            metrics,
        }
    }
}

impl Ev {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

const RETRYING: &str = "attempt failed; retrying";
const RETRYING_OK: &str = "attempt returned a value to retry; retrying";
const GAVE_UP_OK: &str = "giving up; returning the last value";
const INJECTED: &str = "fault injected into the attempt";

/// Fault injection made attempt `attempt` into `kind` (`"error"`: not made, failed with the
/// driver's timeout conversion; `"latency"`: made late): DEBUG, counted when the attempt's
/// outcome is decided, before any event of that decision.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub fn injected(attempt: u32, kind: &str) -> Ev {
    ev(
        tracing::Level::DEBUG,
        INJECTED,
        &[
            ("name", NAME.to_owned()),
            ("attempt", attempt.to_string()),
            ("injected", "true".to_owned()),
            ("kind", kind.to_owned()),
        ],
    )
}

fn ev(level: tracing::Level, message: &str, fields: &[(&str, String)]) -> Ev {
    let mut fields: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    fields.sort();
    Ev {
        level,
        message: message.to_owned(),
        fields,
    }
}

fn error_type() -> String {
    std::any::type_name::<TestError>().to_owned()
}

fn ms(d: u64) -> String {
    format!("{:?}", std::time::Duration::from_millis(d))
}

/// A retry after an error: DEBUG, with the attempt that failed and the sleep.
/// The DEBUG event of a hedge: attempt `attempt` started alongside the ones in flight.
pub fn hedging(attempt: u32) -> Ev {
    ev(
        tracing::Level::DEBUG,
        "no attempt answered within hedge_after; hedging",
        &[("name", NAME.to_owned()), ("attempt", attempt.to_string())],
    )
}

pub fn retrying(attempt: u32, delay_ms: u64) -> Ev {
    retrying_as(attempt, delay_ms, "transient")
}

/// A retry after a failure of `class`: `timeout` is an attempt the policy's `timeout` cut (or
/// fault injection failed as one), whose effect is unknown; the others' effect is unstated (the
/// test's errors say none but `Lost`'s).
pub fn retrying_as(attempt: u32, delay_ms: u64, class: &str) -> Ev {
    let effect = if class == "timeout" {
        "unknown"
    } else {
        "unstated"
    };
    retrying_with(attempt, delay_ms, class, effect)
}

/// A retry after an error that says it timed out (the attempt was not cut): class `timeout`,
/// effect unstated.
pub fn retrying_said_timeout(attempt: u32, delay_ms: u64) -> Ev {
    retrying_with(attempt, delay_ms, "timeout", "unstated")
}

/// A retry after a failure of `class` and `effect` (`not_done`, `unknown`, `unstated`).
pub fn retrying_with(attempt: u32, delay_ms: u64, class: &str, effect: &str) -> Ev {
    ev(
        tracing::Level::DEBUG,
        RETRYING,
        &[
            ("name", NAME.to_owned()),
            ("attempt", attempt.to_string()),
            ("delay", ms(delay_ms)),
            ("class", class.to_owned()),
            ("effect", effect.to_owned()),
            ("error_type", error_type()),
        ],
    )
}

/// A retry after an `Ok` the caller rejected: DEBUG, no error.
pub fn retrying_ok(attempt: u32, delay_ms: u64) -> Ev {
    ev(
        tracing::Level::DEBUG,
        RETRYING_OK,
        &[
            ("name", NAME.to_owned()),
            ("attempt", attempt.to_string()),
            ("delay", ms(delay_ms)),
            ("class", "transient".to_owned()),
        ],
    )
}

/// The call gives up with an error after `attempt` attempts: WARN when retries were made and
/// did not cure it, DEBUG for a non-retryable error or when no retry was made.
pub fn give_up(attempt: u32, reason: GiveUpReason) -> Ev {
    let warn = reason != GiveUpReason::NotRetryable && attempt > 1;
    ev(
        if warn {
            tracing::Level::WARN
        } else {
            tracing::Level::DEBUG
        },
        if warn { "giving up" } else { "not retrying" },
        &[
            ("name", NAME.to_owned()),
            ("attempt", attempt.to_string()),
            ("reason", reason.to_string()),
            ("error_type", error_type()),
        ],
    )
}

/// The breaker rejected attempt `attempt` (1 + the attempts made): DEBUG, routine in an outage.
pub fn rejected(attempt: u32) -> Ev {
    rejected_by(attempt, GiveUpReason::BreakerOpen)
}

/// A guard (`reason`: the breaker, the throttle, the bulkhead) turned attempt `attempt` away.
pub fn rejected_by(attempt: u32, reason: GiveUpReason) -> Ev {
    ev(
        tracing::Level::DEBUG,
        "not retrying",
        &[
            ("name", NAME.to_owned()),
            ("attempt", attempt.to_string()),
            ("reason", reason.to_string()),
            ("error_type", error_type()),
        ],
    )
}

/// The call gives up and returns the last `Ok` the caller had rejected.
pub fn gave_up_ok(attempt: u32, reason: GiveUpReason) -> Ev {
    ev(
        tracing::Level::DEBUG,
        GAVE_UP_OK,
        &[
            ("name", NAME.to_owned()),
            ("attempt", attempt.to_string()),
            ("reason", reason.to_string()),
        ],
    )
}

/// The breaker moved: INFO.
pub fn transition(from: BreakerState, to: BreakerState) -> Ev {
    ev(
        tracing::Level::INFO,
        &format!("circuit breaker {to}"),
        &[
            ("breaker", BREAKER.to_owned()),
            ("from", from.to_string()),
            ("to", to.to_string()),
        ],
    )
}

/// A breaker start state, re-exported for the table.
pub use BreakerStart::{Closed, HalfOpen, Open, OpenExpired};
