//! What a scenario is (a policy, a script of attempt outcomes, guards, a deadline, a cancellation
//! point) and what a run of it shows (result, attempts, sleeps, hooks, events, guards, metrics).

use std::time::Duration;

use reattempt::{BreakerOpen, BreakerState, BulkheadFull, Elapsed, Throttled, Transient};

/// The error of every scripted attempt. `id` tells the attempts' errors apart in results and in
/// `on_retry` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestError {
    /// Retried; `hint_ms` is the server's Retry-After, if any.
    Retryable { id: u32, hint_ms: Option<u64> },
    /// Never retried.
    Fatal(u32),
    /// An error that says it was a timeout (an HTTP client's own read timeout), retried or not.
    SaysTimeout { id: u32, retryable: bool },
    /// An error that says the server asked to slow down (a 429): retried, of class throttling.
    Throttled(u32),
    /// Retried after the delay `delay_for` chooses for it (`ms`), under its hint, if any.
    Paced {
        id: u32,
        ms: u64,
        hint_ms: Option<u64>,
    },
    /// The connection broke after the request was written: the attempt may have acted
    /// ([`Effect::Unknown`](reattempt::Effect::Unknown)). Retried by the crate's judgement: only
    /// on an idempotent call.
    Lost(u32),
    /// The policy's `timeout` cut the attempt (`From<Elapsed>`).
    TimedOut,
    /// The circuit breaker rejected the attempt (`From<BreakerOpen>`).
    Rejected,
    /// The adaptive throttle shed the attempt (`From<Throttled>`).
    Shed,
    /// The bulkhead turned the call away (`From<BulkheadFull>`).
    Full,
}

impl std::fmt::Display for TestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

/// So that a driver over an HTTP client's error type (the reqwest middleware) can carry it.
impl std::error::Error for TestError {}

impl From<Throttled> for TestError {
    fn from(_: Throttled) -> Self {
        TestError::Shed
    }
}

impl From<BulkheadFull> for TestError {
    fn from(_: BulkheadFull) -> Self {
        TestError::Full
    }
}

impl From<Elapsed> for TestError {
    fn from(_: Elapsed) -> Self {
        TestError::TimedOut
    }
}

impl From<BreakerOpen> for TestError {
    fn from(_: BreakerOpen) -> Self {
        TestError::Rejected
    }
}

/// The error says what it is, as a user's error would: the attribute asks `is_timeout` on its
/// own (with a breaker or a budget); the closure API only with `.timeout_if(..)`.
impl Transient for TestError {
    fn is_transient(&self) -> bool {
        retryable(self)
    }
    fn is_timeout(&self) -> bool {
        matches!(self, TestError::SaysTimeout { .. } | TestError::TimedOut)
    }
    fn effect(&self) -> reattempt::Effect {
        match self {
            TestError::Lost(_) => reattempt::Effect::Unknown,
            _ => reattempt::Effect::Unstated,
        }
    }
    fn class(&self) -> reattempt::ErrorClass {
        match self {
            TestError::Throttled(_) => reattempt::ErrorClass::Throttling,
            e if e.is_timeout() => reattempt::ErrorClass::Timeout,
            _ => reattempt::ErrorClass::Transient,
        }
    }
}

/// The `retry_if` of every driver.
pub fn retryable(e: &TestError) -> bool {
    match e {
        TestError::Retryable { .. }
        | TestError::TimedOut
        | TestError::Throttled(_)
        | TestError::Paced { .. } => true,
        TestError::SaysTimeout { retryable, .. } => *retryable,
        // As a `Transient` impl that follows the crate's rule does (see `Effect`).
        TestError::Lost(_) => reattempt::may_repeat(reattempt::Effect::Unknown),
        TestError::Fatal(_) | TestError::Rejected | TestError::Shed | TestError::Full => false,
    }
}

/// The `retry_after` of every driver.
pub fn hint(e: &TestError) -> Option<Duration> {
    match e {
        TestError::Retryable { hint_ms, .. } | TestError::Paced { hint_ms, .. } => {
            hint_ms.map(Duration::from_millis)
        }
        _ => None,
    }
}

/// The `delay_for` of every driver: a `Paced` error's own delay, the schedule's for the rest.
pub fn paced(e: &TestError, _attempt: u32, _computed: Duration) -> Option<Duration> {
    match e {
        TestError::Paced { ms, .. } => Some(Duration::from_millis(*ms)),
        _ => None,
    }
}

/// The `retry_if_ok` of the drivers that have one: values from 1000 up are "a 503 as `Ok`".
#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "retry_if_ok is an Fn(&T) -> bool"
)]
pub fn retry_ok(v: &u32) -> bool {
    *v >= 1000
}

/// The value the script gives when it runs out (never expected: shows up as a mismatch).
pub const SCRIPT_EXHAUSTED: TestError = TestError::Fatal(999);

/// How one attempt ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok(u32),
    Err(TestError),
}

/// One attempt of the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Ends with `Outcome` at once.
    Now(Outcome),
    /// Ends with `Outcome` after this many ms of (paused) time.
    After(u64, Outcome),
    /// Never ends: only `timeout` (or a cancellation) cuts it.
    Hang,
}

pub fn ok(v: u32) -> Step {
    Step::Now(Outcome::Ok(v))
}
/// An `Ok` the caller retries (`retry_if_ok`): only the drivers that have it.
pub fn ok_retry(v: u32) -> Step {
    assert!(retry_ok(&v));
    Step::Now(Outcome::Ok(v))
}
pub fn err(id: u32) -> Step {
    Step::Now(Outcome::Err(e(id)))
}
pub fn hinted(id: u32, hint_ms: u64) -> Step {
    Step::Now(Outcome::Err(eh(id, hint_ms)))
}
pub fn fatal(id: u32) -> Step {
    Step::Now(Outcome::Err(TestError::Fatal(id)))
}
/// A connection lost after the request was written (its effect unknown).
pub fn lost(id: u32) -> Step {
    Step::Now(Outcome::Err(TestError::Lost(id)))
}
pub fn says_timeout(id: u32, retryable: bool) -> Step {
    Step::Now(Outcome::Err(TestError::SaysTimeout { id, retryable }))
}
/// An error whose retry waits `ms` (`delay_for`), with a hint if any.
pub fn paced_err(id: u32, ms: u64, hint_ms: Option<u64>) -> Step {
    Step::Now(Outcome::Err(TestError::Paced { id, ms, hint_ms }))
}
pub fn throttled(id: u32) -> Step {
    Step::Now(Outcome::Err(TestError::Throttled(id)))
}
pub fn hang() -> Step {
    Step::Hang
}
impl Step {
    /// The same outcome, after `ms` of paused time.
    pub fn after(self, ms: u64) -> Step {
        match self {
            Step::Now(o) | Step::After(_, o) => Step::After(ms, o),
            Step::Hang => Step::Hang,
        }
    }
}

/// A retryable error without a hint.
pub fn e(id: u32) -> TestError {
    TestError::Retryable { id, hint_ms: None }
}
/// A retryable error with a hint.
pub fn eh(id: u32, hint_ms: u64) -> TestError {
    TestError::Retryable {
        id,
        hint_ms: Some(hint_ms),
    }
}

/// The schedule (jitter is always none, backoff exponential ×2).
#[derive(Debug, Clone, Copy)]
pub struct PolicySpec {
    pub max_attempts: u32,
    pub delay_ms: u64,
    /// `throttling_delay`, if set.
    pub throttling_delay_ms: Option<u64>,
    pub max_delay_ms: u64,
    pub timeout_ms: Option<u64>,
    pub max_elapsed_ms: Option<u64>,
    /// `hedge_after`, a fixed delay.
    pub hedge_after_ms: Option<u64>,
    /// `one_layer`.
    pub one_layer: bool,
    /// `long_polling`.
    pub long_polling: bool,
    /// `idempotent`, if said (a hedged row is said to be: a call that is not is never hedged).
    pub idempotent: Option<bool>,
    /// `inject_faults` (feature `testing`; rows with it run only with the feature).
    pub faults: Option<FaultSpec>,
}

/// Fault injection (`testing::FaultInjection`): `rate` of injected errors, `latency_ms` added
/// to each injected attempt, `latency_rate` of attempts made late, the draws from `seed`.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub struct FaultSpec {
    pub rate: f64,
    pub latency_ms: Option<u64>,
    pub latency_rate: f64,
    pub seed: u64,
}

/// Where the breaker starts. Its name in events is [`BREAKER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerStart {
    Closed,
    /// Open, `reset_timeout` not passed.
    Open,
    /// Open, `reset_timeout` passed (reads half-open; the next admission moves it).
    OpenExpired,
    /// Half-open, no probe out.
    HalfOpen,
}

#[derive(Debug, Clone, Copy)]
pub struct BreakerSpec {
    pub failure_threshold: u32,
    pub reset_ms: u64,
    pub probes: u32,
    pub start: BreakerStart,
}

pub const BREAKER: &str = "conf-breaker";

#[derive(Debug, Clone, Copy)]
pub struct BudgetSpec {
    pub max_tokens: u32,
    pub retry_cost: u32,
    pub timeout_cost: u32,
    pub throttling_cost: u32,
    pub deposit: u32,
    /// Tokens at the start (reached by withdrawing `retry_cost` from a full bucket).
    pub start: u32,
}

/// An adaptive throttle (K = 1, a 2-minute window with no request bound) that has counted `requests` requests and no
/// accept before the call, and whose random draws start from `seed` (`reattempt::seed_rng`, set
/// just before the call): with no request counted it sheds nothing at first.
#[derive(Debug, Clone, Copy)]
pub struct ThrottleSpec {
    pub requests: u32,
    pub seed: u64,
}

/// A bulkhead of one slot, `max_wait` if any, whose slot another call holds from before the
/// call until `held_ms` (`None`: free from the start).
#[derive(Debug, Clone, Copy)]
pub struct BulkheadSpec {
    pub max_wait_ms: Option<u64>,
    pub held_ms: Option<u64>,
}

/// The call runs inside the first attempt of an outer call with this `max_elapsed` (if any) and
/// `outer_max_attempts`, after the outer attempt spent `spent_ms` of it.
#[derive(Debug, Clone, Copy)]
pub struct Inherited {
    pub max_elapsed_ms: Option<u64>,
    pub spent_ms: u64,
    /// 1: the outer attempt is its call's last; more: the outer call has attempts left.
    pub outer_max_attempts: u32,
}

/// How the call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult {
    Returned(Result<u32, TestError>),
    /// Its future was dropped at the cancellation point.
    Cancelled,
}

/// One attempt as the body saw it: when it started (ms since the run began) and its
/// `context().attempt()`.
pub type AttemptSeen = (u64, u32);

/// One `on_retry` call: the error, `ctx.attempt()`, the delay in ms.
pub type RetrySeen = (TestError, u32, u64);

/// One `tracing` event of target `reattempt`: level, message, fields sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ev {
    pub level: tracing::Level,
    pub message: String,
    pub fields: Vec<(String, String)>,
}

/// The breaker after the call: its `state()` and whether a probe (or a call) would be admitted.
pub type BreakerSeen = (BreakerState, bool);

/// The metrics of the call (its name label only).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metrics {
    /// `reattempt.calls` by `outcome` (only outcomes counted at least once).
    pub calls: Vec<(String, u64)>,
    pub attempts: u64,
    pub breaker_rejections: u64,
    pub budget_refusals: u64,
    pub one_layer_deferrals: u64,
    /// `reattempt.unknown_outcome.refusals`.
    pub unknown_outcome_refusals: u64,
    pub throttle_rejections: u64,
    pub bulkhead_rejections: u64,
    /// `reattempt.retry.delay`, in ms.
    pub delays_ms: Vec<u64>,
    /// `reattempt.faults.injected` by `kind` (only kinds counted at least once).
    pub injected: Vec<(String, u64)>,
}

/// Everything a run shows; the expected value of a scenario has the same shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub result: CallResult,
    pub attempts: Vec<AttemptSeen>,
    /// Every attempt saw the same idempotency key (vacuously true without attempts).
    pub one_key: bool,
    pub on_retry: Vec<RetrySeen>,
    pub events: Vec<Ev>,
    pub breaker: Option<BreakerSeen>,
    pub budget: Option<u32>,
    /// The throttle's `counts()` (requests, accepts) after the call.
    pub throttle: Option<(u64, u64)>,
    /// The bulkhead's `in_flight()` after the call (the holder's slot included, if still held).
    pub bulkhead: Option<u32>,
    /// When the call ended (returned or was dropped), ms since the run began.
    pub ended_ms: u64,
    /// Only compared with `--features metrics`.
    pub metrics: Option<Metrics>,
}

/// Each field of an [`Observed`] as text, by name (`metrics` only when measured).
pub fn fields(o: &Observed) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("result", format!("{:?}", o.result)),
        ("attempts", format!("{:?}", o.attempts)),
        ("one_key", format!("{:?}", o.one_key)),
        ("on_retry", format!("{:?}", o.on_retry)),
        ("events", format!("{:?}", o.events)),
        ("breaker", format!("{:?}", o.breaker)),
        ("budget", format!("{:?}", o.budget)),
        ("throttle", format!("{:?}", o.throttle)),
        ("bulkhead", format!("{:?}", o.bulkhead)),
        ("ended_ms", format!("{:?}", o.ended_ms)),
    ];
    if let Some(m) = &o.metrics {
        out.push(("metrics", format!("{m:?}")));
    }
    out
}
