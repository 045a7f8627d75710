//! Behaviour of `#[retryable]` and `#[recover]`, key by key, under tokio's paused clock: whole
//! schedules run instantly and sleep times are exact.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::{RetryContext, recover, retryable};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Http(u16),
    Timeout,
    Invalid(String),
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::Timeout
    }
}

impl reattempt::Transient for ApiError {
    fn is_transient(&self) -> bool {
        matches!(self, ApiError::Http(500..=599) | ApiError::Timeout)
    }
}

/// A scripted dependency (the testing kit's `Script`): each call plays the next outcome (the
/// last one repeats) and records when it was asked.
type Script = reattempt::testing::Script<u32, ApiError>;

trait ScriptExt {
    /// A script of `outcomes`, the last one repeating.
    fn of(outcomes: impl IntoIterator<Item = Result<u32, ApiError>>) -> Self;
    /// How many times it was asked.
    fn count(&self) -> usize;
    /// The gaps between consecutive calls.
    fn gaps(&self) -> Vec<Duration>;
}

impl ScriptExt for Script {
    fn of(outcomes: impl IntoIterator<Item = Result<u32, ApiError>>) -> Self {
        outcomes.into_iter().collect::<Script>().then_repeat_last()
    }

    fn count(&self) -> usize {
        self.calls()
    }

    fn gaps(&self) -> Vec<Duration> {
        let asked = self.asked();
        asked.windows(2).map(|w| w[1].at - w[0].at).collect()
    }
}

fn fail(status: u16) -> Result<u32, ApiError> {
    Err(ApiError::Http(status))
}

// ---------------------------------------------------------------- schedule keys

#[retryable]
async fn defaults(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn defaults_make_three_attempts_with_full_jitter_under_100_then_200_ms() {
    let s = Script::of([fail(503)]);
    assert_eq!(defaults(&s).await, Err(ApiError::Http(503)));
    assert_eq!(s.count(), 3);
    let gaps = s.gaps();
    assert!(gaps[0] <= 100 * MS && gaps[1] <= 200 * MS, "{gaps:?}");
}

#[retryable(max_attempts = 5, delay = "100ms", jitter = "none")]
async fn exponential(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn exponential_sleeps_are_exact() {
    let s = Script::of([fail(503)]);
    let start = Instant::now();
    assert_eq!(exponential(&s).await, Err(ApiError::Http(503)));
    assert_eq!(s.gaps(), [100 * MS, 200 * MS, 400 * MS, 800 * MS]);
    assert_eq!(start.elapsed(), 1500 * MS);
}

#[tokio::test(start_paused = true)]
async fn success_stops_retrying() {
    let s = Script::of([fail(503), fail(502), Ok(7)]);
    assert_eq!(exponential(&s).await, Ok(7));
    assert_eq!(s.count(), 3);
}

#[retryable(max_attempts = 4, delay = "250ms", backoff = "fixed", jitter = "none")]
async fn fixed(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(max_attempts = 4, delay = "250ms", backoff = "linear", jitter = "none")]
async fn linear(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(
    max_attempts = 5,
    delay = "100ms",
    multiplier = 3,
    max_delay = "1s",
    jitter = "none"
)]
async fn capped(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn fixed_linear_and_capped_schedules() {
    let s = Script::of([fail(500)]);
    let _ = fixed(&s).await;
    assert_eq!(s.gaps(), [250 * MS; 3]);
    let s = Script::of([fail(500)]);
    let _ = linear(&s).await;
    assert_eq!(s.gaps(), [250 * MS, 500 * MS, 750 * MS]);
    let s = Script::of([fail(500)]);
    let _ = capped(&s).await;
    assert_eq!(s.gaps(), [100 * MS, 300 * MS, 900 * MS, 1000 * MS]);
}

#[retryable(max_attempts = 6, delay = "1s", max_delay = "4s", jitter = "full")]
async fn full_jitter(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(max_attempts = 6, delay = "1s", max_delay = "4s", jitter = "equal")]
async fn equal_jitter(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(max_attempts = 6, delay = "1s", max_delay = "4s", jitter = 0.25)]
async fn proportional_jitter(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(
    max_attempts = 8,
    delay = "1s",
    max_delay = "5s",
    jitter = "decorrelated"
)]
async fn decorrelated_jitter(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn jittered_sleeps_stay_in_their_bounds() {
    let nominal = [1000 * MS, 2000 * MS, 4000 * MS, 4000 * MS, 4000 * MS];
    for _ in 0..20 {
        let s = Script::of([fail(500)]);
        let _ = full_jitter(&s).await;
        for (gap, d) in s.gaps().iter().zip(nominal) {
            assert!(*gap <= d, "full: {gap:?} > {d:?}");
        }
        let s = Script::of([fail(500)]);
        let _ = equal_jitter(&s).await;
        for (gap, d) in s.gaps().iter().zip(nominal) {
            assert!(*gap >= d / 2 && *gap <= d, "equal: {gap:?} vs {d:?}");
        }
        let s = Script::of([fail(500)]);
        let _ = proportional_jitter(&s).await;
        for (gap, d) in s.gaps().iter().zip(nominal) {
            assert!(
                *gap >= d.mul_f64(0.75) && *gap <= d.mul_f64(1.25),
                "{gap:?}"
            );
        }
        let s = Script::of([fail(500)]);
        let _ = decorrelated_jitter(&s).await;
        let mut previous = 1000 * MS;
        for gap in s.gaps() {
            assert!(
                gap >= 1000 * MS && gap <= (previous * 3).min(5000 * MS),
                "{gap:?}"
            );
            previous = gap;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_seeded_generator_reproduces_the_jitter() {
    reattempt::seed_rng(99);
    let a = Script::of([fail(500)]);
    let _ = full_jitter(&a).await;
    reattempt::seed_rng(99);
    let b = Script::of([fail(500)]);
    let _ = full_jitter(&b).await;
    assert_eq!(a.gaps(), b.gaps());
}

// ---------------------------------------------------------------- which outcomes are retried

#[retryable(max_attempts = 4, delay = "10ms", jitter = "none",
            retry_on = [ApiError::Http(500..=599) | ApiError::Timeout],
            no_retry_on = [ApiError::Http(501)])]
async fn by_pattern(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn retry_on_and_no_retry_on_patterns() {
    let s = Script::of([fail(503), Ok(1)]);
    assert_eq!(by_pattern(&s).await, Ok(1));
    assert_eq!(s.count(), 2);
    let s = Script::of([fail(404)]);
    assert_eq!(by_pattern(&s).await, Err(ApiError::Http(404)));
    assert_eq!(s.count(), 1, "a 4xx is not in retry_on");
    let s = Script::of([fail(501)]);
    assert_eq!(by_pattern(&s).await, Err(ApiError::Http(501)));
    assert_eq!(s.count(), 1, "no_retry_on wins over retry_on");
}

#[retryable(max_attempts = 3, delay = "10ms", retry_if = reattempt::transient)]
async fn by_trait(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(max_attempts = 3, delay = "10ms", retry_if = |e| matches!(e, ApiError::Invalid(m) if m == "retry me"))]
async fn by_closure(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[retryable(max_attempts = 3, delay = "10ms", retry_on = [ApiError::Timeout],
            retry_if = |e: &ApiError| *e == ApiError::Http(429))]
async fn by_either(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn retry_if_with_a_path_a_closure_or_with_retry_on() {
    let s = Script::of([fail(502)]);
    let _ = by_trait(&s).await;
    assert_eq!(s.count(), 3);
    let s = Script::of([fail(400)]);
    let _ = by_trait(&s).await;
    assert_eq!(s.count(), 1);

    let s = Script::of([Err(ApiError::Invalid("retry me".into()))]);
    let _ = by_closure(&s).await;
    assert_eq!(s.count(), 3);
    let s = Script::of([Err(ApiError::Invalid("no".into()))]);
    let _ = by_closure(&s).await;
    assert_eq!(s.count(), 1);

    for (outcome, attempts) in [(fail(429), 3), (Err(ApiError::Timeout), 3), (fail(500), 1)] {
        let s = Script::of([outcome]);
        let _ = by_either(&s).await;
        assert_eq!(s.count(), attempts);
    }
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "retry_if_ok takes Fn(&T) -> bool"
)]
fn still_pending(v: &u32) -> bool {
    *v == 0
}

#[retryable(max_attempts = 4, delay = "10ms", retry_if_ok = still_pending)]
async fn poll_job(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn retry_if_ok_retries_values_and_returns_the_last_one() {
    let s = Script::of([Ok(0), Ok(0), Ok(5)]);
    assert_eq!(poll_job(&s).await, Ok(5));
    assert_eq!(s.count(), 3);
    let s = Script::of([Ok(0)]);
    assert_eq!(poll_job(&s).await, Ok(0), "attempts ran out: the last Ok");
    assert_eq!(s.count(), 4);
}

// ---------------------------------------------------------------- time limits and hints

// The same slow call, not said to be idempotent: an attempt cut by the timeout may have acted,
// so the crate's judgement (no predicate given) does not repeat it.
#[retryable(max_attempts = 3, delay = "100ms", jitter = "none", timeout = "1s")]
async fn slow_write(s: &Script, work: Duration) -> Result<u32, ApiError> {
    let out = s.next().await;
    tokio::time::sleep(work).await;
    out
}

// The user's own pattern for the timeout: obeyed as written, idempotent or not.
#[retryable(max_attempts = 3, delay = "100ms", jitter = "none", timeout = "1s",
            retry_on = [ApiError::Timeout])]
async fn slow_said(s: &Script, work: Duration) -> Result<u32, ApiError> {
    let out = s.next().await;
    tokio::time::sleep(work).await;
    out
}

// `no_retry_on` alone chooses no error to retry: every other one is retried by the crate's
// judgement, as without the key, so a timeout on a call that is not idempotent is not.
#[retryable(max_attempts = 3, delay = "100ms", jitter = "none", timeout = "1s",
            no_retry_on = [ApiError::Http(400)])]
async fn slow_excepting(s: &Script, work: Duration) -> Result<u32, ApiError> {
    let out = s.next().await;
    tokio::time::sleep(work).await;
    out
}

#[tokio::test(start_paused = true)]
async fn no_retry_on_alone_keeps_the_crates_judgement() {
    let s = Script::of([Ok(1), Ok(2), Ok(3)]);
    assert_eq!(slow_excepting(&s, 2000 * MS).await, Err(ApiError::Timeout));
    assert_eq!(s.count(), 1, "a timeout on a call that is not idempotent");
    let s = Script::of([Err(ApiError::Http(503)), Ok(2)]);
    assert_eq!(
        slow_excepting(&s, Duration::ZERO).await,
        Ok(2),
        "another error: retried"
    );
    let s = Script::of([Err(ApiError::Http(400)), Ok(2)]);
    assert_eq!(
        slow_excepting(&s, Duration::ZERO).await,
        Err(ApiError::Http(400))
    );
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_repeated_only_on_an_idempotent_call_or_by_the_users_rule() {
    let s = Script::of([Ok(1), Ok(2), Ok(3)]);
    assert_eq!(slow_write(&s, 2000 * MS).await, Err(ApiError::Timeout));
    assert_eq!(
        s.count(),
        1,
        "an unknown outcome of a call that is not idempotent"
    );
    let s = Script::of([Ok(1), Ok(2), Ok(3)]);
    assert_eq!(slow_said(&s, 2000 * MS).await, Err(ApiError::Timeout));
    assert_eq!(s.count(), 3, "the user's pattern");
    let s = Script::of([Ok(1), Ok(2), Ok(3)]);
    assert_eq!(slow(&s, 2000 * MS).await, Err(ApiError::Timeout));
    assert_eq!(s.count(), 3, "idempotent");
}

// A read: safe to repeat after an attempt cut by the timeout (which may have acted).
#[retryable(
    max_attempts = 3,
    delay = "100ms",
    jitter = "none",
    timeout = "1s",
    idempotent = true
)]
async fn slow(s: &Script, work: Duration) -> Result<u32, ApiError> {
    let out = s.next().await;
    tokio::time::sleep(work).await;
    out
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_cut_at_its_timeout_and_retried() {
    let s = Script::of([Ok(1)]);
    let start = Instant::now();
    assert_eq!(slow(&s, 5000 * MS).await, Err(ApiError::Timeout));
    assert_eq!(s.count(), 3);
    // 1 s, 100 ms, 1 s, 200 ms, 1 s
    assert_eq!(start.elapsed(), 3300 * MS);
    let s = Script::of([Ok(1)]);
    assert_eq!(slow(&s, 999 * MS).await, Ok(1));
}

#[retryable(
    max_attempts = 100,
    delay = "300ms",
    backoff = "fixed",
    jitter = "none",
    max_elapsed = "1s"
)]
async fn bounded(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_refuses_a_sleep_that_would_end_past_the_deadline() {
    let s = Script::of([fail(503)]);
    let start = Instant::now();
    assert_eq!(bounded(&s).await, Err(ApiError::Http(503)));
    // Attempts at 0, 300, 600, 900 ms; a fifth would start at 1200 ms > 1 s.
    assert_eq!(s.count(), 4);
    assert_eq!(start.elapsed(), 900 * MS);
}

#[retryable(
    max_attempts = 10,
    delay = "100ms",
    backoff = "fixed",
    jitter = "none",
    timeout = "400ms",
    max_elapsed = "1s",
    idempotent = true
)]
async fn clipped(s: &Script) -> Result<u32, ApiError> {
    let out = s.next().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    out
}

#[tokio::test(start_paused = true)]
async fn the_last_attempts_timeout_is_clipped_to_what_remains() {
    let s = Script::of([Ok(1)]);
    let start = Instant::now();
    assert_eq!(clipped(&s).await, Err(ApiError::Timeout));
    // 0–400 ms, a 100 ms sleep, 500–900 ms; the next sleep would end at 1000 ms, the deadline:
    // refused. So two attempts, and the call ends at 900 ms.
    assert_eq!(s.count(), 2);
    assert_eq!(start.elapsed(), 900 * MS);
}

#[retryable(
    max_attempts = 10,
    delay = "50ms",
    backoff = "fixed",
    jitter = "none",
    timeout = "400ms",
    max_elapsed = "1s",
    idempotent = true
)]
async fn clipped_late(s: &Script) -> Result<u32, ApiError> {
    let out = s.next().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    out
}

#[tokio::test(start_paused = true)]
async fn a_late_attempt_gets_only_the_remaining_time() {
    let s = Script::of([Ok(1)]);
    let start = Instant::now();
    assert_eq!(clipped_late(&s).await, Err(ApiError::Timeout));
    // 0–400, 450–850, then 900 ms: only 100 ms remain, so the third attempt ends at 1000 ms.
    assert_eq!(s.count(), 3);
    assert_eq!(start.elapsed(), 1000 * MS);
}

#[retryable(max_attempts = 3, delay = "100ms", max_delay = "5s", jitter = "none",
            retry_after = |e| match e { ApiError::Http(429) => Some(Duration::from_secs(2)),
                                        ApiError::Http(503) => Some(Duration::from_secs(60)),
                                        _ => None })]
async fn hinted(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_waited_out_and_a_hint_beyond_max_delay_ends_the_call() {
    // 2 s asked: waited. 60 s asked, beyond max_delay (5 s): never come back early, so the call
    // ends with that error (it used to be cut to 5 s).
    let s = Script::of([fail(429), fail(503), Ok(1)]);
    assert_eq!(hinted(&s).await, Err(ApiError::Http(503)));
    assert_eq!(s.gaps(), [2000 * MS]);
    let s = Script::of([fail(500), fail(500), Ok(1)]);
    assert_eq!(hinted(&s).await, Ok(1));
    assert_eq!(s.gaps(), [100 * MS, 200 * MS]);
}

// ---------------------------------------------------------------- on_retry, context, name

static RETRIES: Mutex<Vec<(u32, Duration, String)>> = Mutex::new(Vec::new());

fn log_retry(e: &ApiError, ctx: &RetryContext, delay: Duration) {
    RETRIES
        .lock()
        .unwrap()
        .push((ctx.attempt(), delay, format!("{e:?}")));
}

#[retryable(max_attempts = 3, delay = "100ms", jitter = "none", on_retry = log_retry,
            name = "observed")]
async fn observed(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[tokio::test(start_paused = true)]
async fn on_retry_is_called_before_each_sleep() {
    let s = Script::of([fail(500), Err(ApiError::Timeout), Ok(1)]);
    assert_eq!(observed(&s).await, Ok(1));
    assert_eq!(
        *RETRIES.lock().unwrap(),
        [
            (1, 100 * MS, "Http(500)".to_string()),
            (2, 200 * MS, "Timeout".to_string())
        ]
    );
}

#[retryable(max_attempts = 4, delay = "10ms",
            on_retry = |_e, ctx, _d| assert!(ctx.max_attempts() == 4))]
async fn with_context(seen: &Mutex<Vec<RetryContext>>) -> Result<u32, ApiError> {
    let ctx = reattempt::context().expect("inside an attempt");
    seen.lock().unwrap().push(ctx);
    if ctx.attempt() < 3 {
        Err(ApiError::Http(503))
    } else {
        Ok(ctx.attempt())
    }
}

#[tokio::test(start_paused = true)]
async fn context_numbers_attempts_and_keeps_one_key_per_call() {
    let seen = Mutex::new(Vec::new());
    assert_eq!(with_context(&seen).await, Ok(3));
    let first: Vec<_> = seen.lock().unwrap().drain(..).collect();
    assert_eq!(
        first.iter().map(RetryContext::attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(first.iter().all(|c| c.max_attempts() == 4));
    let key = first[0].idempotency_key();
    assert!(first.iter().all(|c| c.idempotency_key() == key));
    assert_eq!(with_context(&seen).await, Ok(3));
    assert_ne!(
        seen.lock().unwrap()[0].idempotency_key(),
        key,
        "a new call, a new key"
    );
    assert!(reattempt::context().is_none());
}

#[retryable(max_attempts = 2, delay = "10ms")]
async fn outer(inner_attempts: &Mutex<Vec<u32>>) -> Result<u32, ApiError> {
    let before = reattempt::context().unwrap().attempt();
    let _ = inner(inner_attempts).await;
    let after = reattempt::context().unwrap().attempt();
    assert_eq!(
        before, after,
        "the outer context comes back after the inner call"
    );
    Err(ApiError::Http(500))
}

#[retryable(max_attempts = 3, delay = "10ms")]
async fn inner(attempts: &Mutex<Vec<u32>>) -> Result<u32, ApiError> {
    attempts
        .lock()
        .unwrap()
        .push(reattempt::context().unwrap().attempt());
    Err(ApiError::Http(500))
}

#[tokio::test(start_paused = true)]
async fn nested_calls_see_their_own_context() {
    let attempts = Mutex::new(Vec::new());
    let _ = outer(&attempts).await;
    assert_eq!(*attempts.lock().unwrap(), [1, 2, 3, 1, 2, 3]);
}

// ---------------------------------------------------------------- recover

struct Gateway {
    script: Script,
    recovered: AtomicU32,
}

impl Gateway {
    fn new(outcomes: impl IntoIterator<Item = Result<u32, ApiError>>) -> Self {
        Gateway {
            script: Script::of(outcomes),
            recovered: AtomicU32::new(0),
        }
    }

    #[retryable(max_attempts = 3, delay = "10ms", retry_on = [ApiError::Http(500..=599)],
                recover = Self::pending)]
    async fn charge(&self, order: String, amount: &u32) -> Result<u32, ApiError> {
        assert_eq!(order, "order-1");
        self.script.next().await.map(|v| v + amount)
    }

    #[recover]
    async fn pending(&self, err: ApiError, order: String, amount: &u32) -> Result<u32, ApiError> {
        self.recovered.fetch_add(1, SeqCst);
        assert_eq!(order, "order-1");
        match err {
            ApiError::Http(503) => Ok(1_000 + amount),
            other => Err(other),
        }
    }

    #[retryable(max_attempts = 2, delay = "10ms", recover = Self::error_only)]
    async fn refund(&mut self) -> Result<u32, ApiError> {
        self.script.next().await
    }

    #[recover]
    async fn error_only(&mut self, err: ApiError) -> Result<u32, ApiError> {
        self.recovered.fetch_add(1, SeqCst);
        Err(ApiError::Invalid(format!("recovered {err:?}")))
    }
}

#[tokio::test(start_paused = true)]
async fn recover_gets_the_last_error_and_the_arguments_after_exhaustion() {
    let g = Gateway::new([fail(500), fail(502), fail(503)]);
    assert_eq!(g.charge("order-1".into(), &5).await, Ok(1_005));
    assert_eq!(g.script.count(), 3);
    assert_eq!(g.recovered.load(SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn recover_runs_at_once_for_a_non_retryable_error_and_its_error_reaches_the_caller() {
    let g = Gateway::new([fail(400)]);
    assert_eq!(
        g.charge("order-1".into(), &5).await,
        Err(ApiError::Http(400))
    );
    assert_eq!(g.script.count(), 1);
    assert_eq!(g.recovered.load(SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn recover_is_never_called_on_success() {
    let g = Gateway::new([fail(500), Ok(1)]);
    assert_eq!(g.charge("order-1".into(), &5).await, Ok(6));
    assert_eq!(g.recovered.load(SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn recover_with_the_error_only_on_a_mut_self_method() {
    let mut g = Gateway::new([fail(500)]);
    assert_eq!(
        g.refund().await,
        Err(ApiError::Invalid("recovered Http(500)".into()))
    );
    assert_eq!(g.script.count(), 2);
    // Still an ordinary method.
    assert!(g.error_only(ApiError::Timeout).await.is_err());
}

#[retryable(max_attempts = 50, delay = "100ms", backoff = "fixed", jitter = "none",
            max_elapsed = "350ms", recover = after_deadline)]
async fn until_deadline(s: &Script) -> Result<u32, ApiError> {
    s.next().await
}

#[recover]
async fn after_deadline(err: ApiError, s: &Script) -> Result<u32, ApiError> {
    Ok(u32::try_from(s.count()).unwrap() * 100 + u32::from(err == ApiError::Http(503)))
}

#[tokio::test(start_paused = true)]
async fn recover_runs_when_max_elapsed_runs_out() {
    let s = Script::of([fail(503)]);
    // Attempts at 0, 100, 200, 300 ms; the next sleep would end at 400 > 350.
    assert_eq!(until_deadline(&s).await, Ok(401));
}

// ---------------------------------------------------------------- function shapes

/// Owned arguments: each attempt gets its own clone; the body may consume it.
#[derive(Debug)]
struct Counted<'a>(&'a AtomicU32);

impl Clone for Counted<'_> {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, SeqCst);
        Counted(self.0)
    }
}

#[retryable(max_attempts = 3, delay = "1ms")]
async fn consumes(arg: Counted<'_>, mut label: String) -> Result<u32, ApiError> {
    label.push('!');
    assert!(arg.0.load(SeqCst) >= 1, "this attempt's clone was counted");
    Err(ApiError::Invalid(label))
}

#[tokio::test(start_paused = true)]
async fn owned_arguments_are_cloned_for_each_attempt() {
    let clones = AtomicU32::new(0);
    let out = consumes(Counted(&clones), "x".into()).await;
    assert_eq!(
        out,
        Err(ApiError::Invalid("x!".into())),
        "each attempt starts from the original"
    );
    assert_eq!(clones.load(SeqCst), 3);
}

#[derive(Clone)]
struct Conn {
    attempts: std::sync::Arc<AtomicU32>,
}

impl Conn {
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn by_value(self) -> Result<u32, ApiError> {
        let n = self.attempts.fetch_add(1, SeqCst) + 1;
        if n < 3 { Err(ApiError::Timeout) } else { Ok(n) }
    }
}

trait Store {
    async fn get(&self, key: &str) -> Result<String, ApiError>;
}

struct Flaky(AtomicU32);

impl Store for Flaky {
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn get(&self, key: &str) -> Result<String, ApiError> {
        if self.0.fetch_add(1, SeqCst) < 2 {
            Err(ApiError::Http(503))
        } else {
            Ok(format!("value of {key}"))
        }
    }
}

#[retryable(max_attempts = 3, delay = "1ms")]
async fn generic<T, F>(make: F, (a, b): (u32, u32), _: u8) -> Result<T, ApiError>
where
    T: From<u32>,
    F: Fn(u32) -> Option<u32> + Clone,
{
    make(a + b).map(T::from).ok_or(ApiError::Http(500))
}

#[retryable(max_attempts = 2, delay = "1ms")]
async fn with_impl_trait(f: impl Fn() -> u32 + Clone, s: &mut Vec<u32>) -> Result<u32, ApiError> {
    s.push(f());
    if s.len() < 2 {
        Err(ApiError::Timeout)
    } else {
        Ok(s.iter().sum())
    }
}

#[retryable(max_attempts = 3, delay = "5ms", backoff = "fixed", jitter = "none")]
fn blocking(calls: &AtomicU32) -> std::io::Result<u32> {
    let n = calls.fetch_add(1, SeqCst) + 1;
    if n < 3 {
        return Err(std::io::ErrorKind::ConnectionReset.into());
    }
    Ok(reattempt::context().map_or(0, |c| c.attempt()))
}

#[tokio::test(start_paused = true)]
async fn every_function_shape_retries() {
    let attempts = std::sync::Arc::new(AtomicU32::new(0));
    let conn = Conn {
        attempts: attempts.clone(),
    };
    assert_eq!(conn.by_value().await, Ok(3));

    let store = Flaky(AtomicU32::new(0));
    assert_eq!(store.get("k").await, Ok("value of k".to_string()));

    let seen = AtomicU32::new(0);
    let make = |x: u32| (seen.fetch_add(1, SeqCst) >= 1).then_some(x);
    assert_eq!(generic::<u64, _>(make, (2, 3), 0).await, Ok(5));

    let mut log = vec![];
    assert_eq!(with_impl_trait(|| 4, &mut log).await, Ok(8));
}

#[test]
fn blocking_functions_retry_with_thread_sleeps() {
    let calls = AtomicU32::new(0);
    let start = std::time::Instant::now();
    assert_eq!(blocking(&calls).unwrap(), 3);
    assert!(start.elapsed() >= 10 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_retryable_method_future_is_send() {
    fn assert_send<T: Send>(t: T) -> T {
        t
    }
    let g = std::sync::Arc::new(Gateway::new([fail(500), Ok(2)]));
    let handle = tokio::spawn(assert_send({
        let g = g.clone();
        async move { g.charge("order-1".into(), &1).await }
    }));
    assert_eq!(handle.await.unwrap(), Ok(3));
}

static FOREVER: AtomicU32 = AtomicU32::new(0);

/// "Retry until the deadline": `max_attempts = u32::MAX` is accepted and the call ends by its
/// `max_elapsed` (1 s of 10 ms sleeps: about a hundred attempts), not by a count.
#[retryable(max_attempts = u32::MAX, delay = "10ms", backoff = "fixed", jitter = "none", max_elapsed = "1s")]
async fn until_the_deadline() -> Result<u32, String> {
    FOREVER.fetch_add(1, SeqCst);
    Err("down".to_owned())
}

#[tokio::test(start_paused = true)]
async fn max_attempts_u32_max_retries_until_the_deadline() {
    let start = Instant::now();
    assert_eq!(until_the_deadline().await, Err("down".to_owned()));
    let made = FOREVER.load(SeqCst);
    assert!((95..=101).contains(&made), "{made} attempts");
    assert!(start.elapsed() <= Duration::from_secs(1));
}

mod one_attempt_still_classifies {
    use std::sync::LazyLock;

    use reattempt::{CircuitBreaker, RetryBudget, retryable};

    #[derive(Debug, PartialEq)]
    enum ApiError {
        BadRequest,
        Open,
    }

    impl From<reattempt::BreakerOpen> for ApiError {
        fn from(_: reattempt::BreakerOpen) -> Self {
            ApiError::Open
        }
    }

    static BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(|| {
        CircuitBreaker::builder()
            .failure_threshold(2)
            .build()
            .unwrap()
    });
    static BUDGET: LazyLock<RetryBudget> =
        LazyLock::new(|| RetryBudget::builder().max_tokens(100).build().unwrap());

    /// One attempt, and still a classification: a 400 is not the dependency's failure, so the
    /// breaker does not count it; and a first-try success pays into the shared budget.
    #[retryable(max_attempts = 1, circuit_breaker = BREAKER, no_retry_on = [ApiError::BadRequest], budget = BUDGET)]
    async fn call(fail: bool) -> Result<u32, ApiError> {
        if fail {
            Err(ApiError::BadRequest)
        } else {
            Ok(1)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn max_attempts_1_keeps_retry_on_and_budget_meaningful() {
        for _ in 0..5 {
            assert_eq!(call(true).await, Err(ApiError::BadRequest));
        }
        assert!(BUDGET.try_withdraw(false));
        assert_eq!(
            call(false).await,
            Ok(1),
            "the breaker never counted a 400: still closed"
        );
        assert_eq!(BUDGET.available(), 96, "a first-try success deposits");
    }
}
