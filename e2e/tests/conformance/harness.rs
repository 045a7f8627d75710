//! Runs one scenario through one driver on tokio's paused clock and records what it shows.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, Jitter, RetryBudget, RetryPolicy};
use tokio::time::Instant;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use crate::drivers::{CallFuture, Driver, Env};
use crate::expect::Scenario;
use crate::model::{
    AttemptSeen, BREAKER, BreakerSpec, BreakerStart, BudgetSpec, BulkheadSpec, CallResult, Ev,
    Inherited, Observed, Outcome, PolicySpec, RetrySeen, SCRIPT_EXHAUSTED, Step, TestError,
    ThrottleSpec,
};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn ms_since(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_millis()).expect("a test lasts less than 2^64 ms")
}

/// The body of every driver's attempts and its `on_retry` hook: plays the script and records
/// what each attempt saw. `Sync` (its records behind locks), so that a driver that needs
/// `'static + Send + Sync` hooks (the reqwest middleware) can share it through an `Arc`.
pub struct Probe {
    t0: Instant,
    script: Mutex<VecDeque<Step>>,
    attempts: Mutex<Vec<AttemptSeen>>,
    keys: Mutex<Vec<Option<u128>>>,
    on_retry: Mutex<Vec<RetrySeen>>,
}

impl Probe {
    fn new(t0: Instant, script: &[Step]) -> Self {
        Probe {
            t0,
            script: Mutex::new(script.iter().copied().collect()),
            attempts: Mutex::default(),
            keys: Mutex::default(),
            on_retry: Mutex::default(),
        }
    }

    /// One attempt: records its start, its `context()`, then plays the next step.
    pub async fn attempt(&self) -> Result<u32, TestError> {
        let ctx = reattempt::context();
        self.attempts
            .lock()
            .unwrap()
            .push((ms_since(self.t0), ctx.map_or(0, |c| c.attempt())));
        self.keys
            .lock()
            .unwrap()
            .push(ctx.map(|c| c.idempotency_key().as_u128()));
        let step = self.script.lock().unwrap().pop_front();
        let outcome = match step {
            None => Outcome::Err(SCRIPT_EXHAUSTED),
            Some(Step::Now(o)) => o,
            Some(Step::After(n, o)) => {
                tokio::time::sleep(ms(n)).await;
                o
            }
            Some(Step::Hang) => std::future::pending().await,
        };
        match outcome {
            Outcome::Ok(v) => Ok(v),
            Outcome::Err(e) => Err(e),
        }
    }

    /// The `on_retry` hook.
    pub fn on_retry(&self, error: &TestError, attempt: u32, delay: Duration) {
        let delay = u64::try_from(delay.as_millis()).expect("small delays");
        self.on_retry.lock().unwrap().push((*error, attempt, delay));
    }
}

fn policy(p: PolicySpec) -> RetryPolicy {
    let mut b = RetryPolicy::builder()
        .max_attempts(p.max_attempts)
        .delay(ms(p.delay_ms))
        .max_delay(ms(p.max_delay_ms))
        .jitter(Jitter::None);
    if let Some(t) = p.timeout_ms {
        b = b.timeout(ms(t));
    }
    if let Some(t) = p.throttling_delay_ms {
        b = b.throttling_delay(ms(t));
    }
    if let Some(m) = p.max_elapsed_ms {
        b = b.max_elapsed(ms(m));
    }
    if let Some(h) = p.hedge_after_ms {
        b = b.hedge_after(reattempt::HedgeAfter::Fixed(ms(h)));
    }
    // A hedged row is of a call that says it is safe to repeat: no other is hedged.
    match p.idempotent {
        Some(i) => b = b.idempotent(i),
        None if p.hedge_after_ms.is_some() => b = b.idempotent(true),
        None => {}
    }
    #[cfg(feature = "testing")]
    if let Some(f) = p.faults {
        let mut faults = reattempt::testing::FaultInjection::builder()
            .rate(f.rate)
            .latency_rate(f.latency_rate)
            .seed(f.seed);
        if let Some(l) = f.latency_ms {
            faults = faults.latency(ms(l));
        }
        b = b.inject_faults(faults.build().expect("valid faults"));
    }
    #[cfg(not(feature = "testing"))]
    assert!(
        p.faults.is_none(),
        "a row injecting faults needs feature `testing`"
    );
    b.one_layer(p.one_layer)
        .long_polling(p.long_polling)
        .build()
        .expect("a valid policy")
}

/// A breaker in its starting state (moving the paused clock when it must have expired).
async fn breaker(spec: BreakerSpec) -> CircuitBreaker {
    let b = CircuitBreaker::builder()
        .failure_threshold(spec.failure_threshold)
        .reset_timeout(ms(spec.reset_ms))
        .half_open_probes(spec.probes)
        .name(BREAKER)
        .build()
        .expect("a valid breaker");
    if spec.start != BreakerStart::Closed {
        for _ in 0..spec.failure_threshold {
            b.record(b.try_acquire().expect("closed"), false);
        }
    }
    if matches!(
        spec.start,
        BreakerStart::OpenExpired | BreakerStart::HalfOpen
    ) {
        tokio::time::advance(ms(spec.reset_ms)).await;
    }
    if spec.start == BreakerStart::HalfOpen {
        // Moves it to half-open, leaving no probe out.
        b.release(b.try_acquire().expect("reset_timeout passed"));
    }
    b
}

fn budget(spec: BudgetSpec) -> RetryBudget {
    let b = RetryBudget::builder()
        .max_tokens(spec.max_tokens)
        .retry_cost(spec.retry_cost)
        .timeout_cost(spec.timeout_cost)
        .throttling_cost(spec.throttling_cost)
        .success_deposit(spec.deposit)
        .build()
        .expect("a valid budget");
    while b.available() > spec.start {
        assert!(b.try_withdraw(false), "start reachable by retry_cost steps");
    }
    assert_eq!(
        b.available(),
        spec.start,
        "start reachable by retry_cost steps"
    );
    b
}

/// A throttle that counted `spec.requests` requests and no accept (K = 1: it sheds with
/// probability requests / (requests + 1)). Its window is time-only (no request bound), so every
/// request counted before the call is still in it. The book's throttle as written
/// (`forget_outage(false)`): the model sheds by the formula alone; the default's probe (one
/// request a tick let through while it sheds everything) and its forgetting of an outage are
/// held by the throttle's own tests (`guards::throttle`).
fn throttle(spec: ThrottleSpec) -> AdaptiveThrottle {
    let t = AdaptiveThrottle::builder()
        .k(1.0)
        .window_requests(u32::MAX)
        .forget_outage(false)
        .build()
        .expect("a valid throttle");
    for _ in 0..spec.requests {
        let _ = t.try_acquire();
    }
    t
}

fn bulkhead(spec: BulkheadSpec) -> Bulkhead {
    let mut b = Bulkhead::builder().max_concurrent(1);
    if let Some(w) = spec.max_wait_ms {
        b = b.max_wait(ms(w));
    }
    b.build().expect("a valid bulkhead")
}

/// The call made inside the first attempt of an outer call with `max_elapsed` (if any) and
/// `outer_max_attempts`, after that attempt spent `spent_ms`. The outer call hands back the
/// inner result as its `Ok`, so it makes one attempt and reports nothing itself.
async fn nested(inner: CallFuture<'_>, inherited: Inherited) -> Result<u32, TestError> {
    let mut outer = RetryPolicy::builder()
        .max_attempts(inherited.outer_max_attempts)
        .jitter(Jitter::None);
    if let Some(max_elapsed) = inherited.max_elapsed_ms {
        outer = outer.max_elapsed(ms(max_elapsed));
    }
    let outer = outer.build().expect("a valid outer policy");
    let mut inner = Some(inner);
    let out: Result<Result<u32, TestError>, TestError> = outer
        .retry(|| {
            let inner = inner.take().expect("one outer attempt");
            async move {
                tokio::time::sleep(ms(inherited.spent_ms)).await;
                Ok(inner.await)
            }
        })
        .without_timeout()
        .name("outer")
        .await;
    out.expect("the outer call returns the inner result")
}

/// Runs `scenario` through `driver` (under a paused clock, which the caller's
/// `#[tokio::test(start_paused = true)]` provides).
pub async fn run(scenario: &Scenario, driver: &dyn Driver) -> Observed {
    install_capture();
    let policy = policy(scenario.policy);
    // The harness owns the guards and the probe behind `Arc`s: a driver borrows them, or clones
    // an `Arc` when it must own one (the reqwest middleware's `'static` guards and hooks).
    let breaker = match scenario.breaker {
        Some(spec) => Some(Arc::new(breaker(spec).await)),
        None => None,
    };
    let budget = scenario.budget.map(budget).map(Arc::new);
    let throttle = scenario.throttle.map(throttle).map(Arc::new);
    let bulkhead = scenario.bulkhead.map(bulkhead).map(Arc::new);
    let t0 = Instant::now();
    let probe = Arc::new(Probe::new(t0, &scenario.script));
    let env = Env {
        policy: &policy,
        breaker: breaker.as_ref(),
        budget: budget.as_ref(),
        throttle: throttle.as_ref(),
        bulkhead: bulkhead.as_ref(),
        probe: &probe,
    };
    // Another call's slot, held from before the call until `held_ms` (or to the end).
    let held = scenario
        .bulkhead
        .zip(bulkhead.as_ref())
        .and_then(|(spec, b)| {
            let held_ms = spec.held_ms?;
            let permit = b.try_acquire().expect("a free bulkhead");
            Some(async move {
                tokio::time::sleep(ms(held_ms)).await;
                drop(permit);
            })
        });

    EVENTS.with_borrow_mut(|e| *e = Some(vec![]));
    #[cfg(feature = "metrics")]
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    #[cfg(feature = "metrics")]
    let snapshotter = recorder.snapshotter();
    #[cfg(feature = "metrics")]
    let local = metrics::set_default_local_recorder(&recorder);

    if let Some(spec) = scenario.throttle {
        // The throttle's draws (and nothing else: no jitter) come from this seed.
        reattempt::seed_rng(spec.seed);
    }
    let call = driver.call(env);
    let call: CallFuture<'_> = match scenario.inherited {
        Some(inherited) => Box::pin(nested(call, inherited)),
        None => call,
    };
    let call: CallFuture<'_> = match held {
        // The holder gives its slot back at `held_ms`, or when the call ends.
        Some(held) => Box::pin(async move {
            let (mut call, mut held) = (call, std::pin::pin!(held));
            tokio::select! {
                out = &mut call => out,
                () = &mut held => call.await,
            }
        }),
        None => call,
    };
    let result = match scenario.cancel_at_ms {
        Some(at) => match tokio::time::timeout(ms(at), call).await {
            Ok(r) => CallResult::Returned(r),
            Err(_) => CallResult::Cancelled,
        },
        None => CallResult::Returned(call.await),
    };
    let ended_ms = ms_since(t0);

    #[cfg(feature = "metrics")]
    drop(local);
    let events = EVENTS.with_borrow_mut(Option::take).unwrap_or_default();
    // After the events are taken: admitting may move an expired breaker.
    let breaker = breaker.as_ref().map(|b| {
        let state = b.state();
        let admits = match b.try_acquire() {
            Ok(permit) => {
                b.release(permit);
                true
            }
            Err(_) => false,
        };
        (state, admits)
    });
    let keys = probe.keys.lock().unwrap().clone();
    Observed {
        result,
        attempts: probe.attempts.lock().unwrap().clone(),
        one_key: keys.iter().all(|k| k.is_some() && *k == keys[0]),
        on_retry: probe.on_retry.lock().unwrap().clone(),
        events: driver.normalized(events),
        breaker,
        budget: budget.as_deref().map(RetryBudget::available),
        throttle: throttle.as_deref().map(AdaptiveThrottle::counts),
        bulkhead: bulkhead.as_deref().map(Bulkhead::in_flight),
        ended_ms,
        #[cfg(feature = "metrics")]
        metrics: Some(metrics_of(&snapshotter)),
        #[cfg(not(feature = "metrics"))]
        metrics: None,
    }
}

#[cfg(feature = "metrics")]
fn metrics_of(snapshotter: &metrics_util::debugging::Snapshotter) -> crate::model::Metrics {
    use metrics_util::debugging::DebugValue;

    use crate::expect::NAME;

    let mut m = crate::model::Metrics::default();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        if !key
            .labels()
            .any(|l| l.key() == "reattempt.name" && l.value() == NAME)
        {
            continue;
        }
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
        };
        match (key.name(), value) {
            ("reattempt.calls", DebugValue::Counter(n)) if n > 0 => {
                m.calls
                    .push((label("reattempt.outcome").unwrap_or_default(), n));
            }
            ("reattempt.attempts", DebugValue::Counter(n)) => m.attempts += n,
            ("reattempt.breaker.rejections", DebugValue::Counter(n)) => {
                m.breaker_rejections += n;
            }
            ("reattempt.budget.refusals", DebugValue::Counter(n)) => m.budget_refusals += n,
            ("reattempt.one_layer.deferrals", DebugValue::Counter(n)) => {
                m.one_layer_deferrals += n;
            }
            ("reattempt.unknown_outcome.refusals", DebugValue::Counter(n)) => {
                m.unknown_outcome_refusals += n;
            }
            ("reattempt.throttle.rejections", DebugValue::Counter(n)) => {
                m.throttle_rejections += n;
            }
            ("reattempt.bulkhead.rejections", DebugValue::Counter(n)) => {
                m.bulkhead_rejections += n;
            }
            ("reattempt.faults.injected", DebugValue::Counter(n)) if n > 0 => {
                m.injected
                    .push((label("reattempt.fault").unwrap_or_default(), n));
            }
            ("reattempt.retry.delay", DebugValue::Histogram(values)) => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                m.delays_ms.extend(
                    values
                        .iter()
                        .map(|v| (v.into_inner() * 1000.0).round() as u64),
                );
            }
            (name, value) => panic!("unexpected metric {name}: {value:?}"),
        }
    }
    m.calls.sort();
    m.injected.sort();
    m
}

// Events: one global subscriber for the whole binary, installed once before any event (tracing
// caches each callsite's interest, so a subscriber set per test could miss events), recording
// into the running test's thread (each `#[tokio::test]` runs on its own thread).

thread_local! {
    static EVENTS: RefCell<Option<Vec<Ev>>> = const { RefCell::new(None) };
}

struct Capture;

struct Fields<'a> {
    message: &'a mut String,
    fields: &'a mut Vec<(String, String)>,
}

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.message = format!("{value:?}");
        } else {
            self.fields
                .push((field.name().to_owned(), format!("{value:?}")));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields
            .push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "reattempt" {
            return;
        }
        let (mut message, mut fields) = (String::new(), vec![]);
        event.record(&mut Fields {
            message: &mut message,
            fields: &mut fields,
        });
        fields.sort();
        EVENTS.with_borrow_mut(|events| {
            if let Some(events) = events {
                events.push(Ev {
                    level: *event.metadata().level(),
                    message,
                    fields,
                });
            }
        });
    }
}

fn install_capture() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Capture))
            .expect("no other global subscriber in this binary");
    });
}
