//! Model-based test of the circuit breaker: proptest-generated sequences of acquire / record
//! (including late and out-of-order records of old permits) / read the state / advance the paused
//! clock, applied both to the real `CircuitBreaker` and to a small reference model written
//! straight from the documented state machine, comparing every observable step by step, in both
//! trip modes.
//!
//! The documented state machine (see `CircuitBreaker`'s rustdoc):
//! - closed: every call is let through. Outcomes count; in the consecutive mode `failure_threshold`
//!   failures in a row open it; in the rate mode, once `minimum_calls` of the last
//!   `sliding_window` calls are in, failures / calls ≥ `failure_rate` (to the millionth) opens it.
//! - open: every call is rejected until `reset_timeout` has passed since it opened (a
//!   `reset_timeout` beyond what the clock can represent: never); then it reads half-open.
//! - half-open: probes are let through while the probes that succeeded plus the probes still out
//!   are fewer than `half_open_probes`; a probe out for `reset_timeout` no longer holds its slot.
//!   A probe's success counts (even late, while still half-open); when `half_open_probes` have
//!   succeeded it closes; a probe's failure reopens it.
//! - an outcome recorded under a permit from before the last transition is ignored.
//! - reading the state changes nothing.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "small counts in a test model"
)]

use std::time::Duration;

use proptest::prelude::*;
use retry_runtime::{BreakerState, CircuitBreaker, Permit};

/// Beyond this, a deadline is past anything the clock can represent (the model's "never").
const NEVER: Duration = Duration::from_secs(u64::MAX / 4);
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
/// `"300000000000y"` in a config file.
const YEARS_300G: Duration = Duration::from_secs(300_000_000_000 * 365 * 24 * 3600);

#[derive(Debug, Clone, Copy)]
enum Mode {
    Consecutive(u32),
    Rate {
        rate: f64,
        window: u32,
        minimum_calls: u32,
    },
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Zero,
    Nano,
    Milli,
    Half,
    Reset,
    ResetMinusNano,
    ResetPlusNano,
    Hour,
    Century,
}

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    /// Records the outcome of the `i % len`-th permit still held (oldest first).
    Record(usize, bool),
    State,
    Advance(Step),
}

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ModelPermit {
    epoch: u64,
    probe: Option<u64>,
}

#[derive(Debug)]
enum Phase {
    Closed,
    Open {
        until: Option<Duration>,
    },
    HalfOpen {
        succeeded: u64,
        next_id: u64,
        /// Probes not yet reported: (id, when their slot is freed; None: never).
        out: Vec<(u64, Option<Duration>)>,
    },
}

#[derive(Debug)]
struct Model {
    mode: Mode,
    reset: Duration,
    probes: u32,
    now: Duration,
    epoch: u64,
    phase: Phase,
    consecutive: u32,
    window: std::collections::VecDeque<bool>,
}

impl Model {
    fn new(mode: Mode, reset: Duration, probes: u32) -> Self {
        Model {
            mode,
            reset,
            probes,
            now: Duration::ZERO,
            epoch: 0,
            phase: Phase::Closed,
            consecutive: 0,
            window: std::collections::VecDeque::new(),
        }
    }

    fn later(&self) -> Option<Duration> {
        self.now.checked_add(self.reset).filter(|t| *t < NEVER)
    }

    fn go(&mut self, phase: Phase) {
        self.epoch += 1;
        self.consecutive = 0;
        self.window.clear();
        self.phase = phase;
    }

    fn open(&mut self) {
        let until = self.later();
        self.go(Phase::Open { until });
    }

    fn state(&self) -> BreakerState {
        match &self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { until } if until.is_some_and(|u| self.now >= u) => BreakerState::HalfOpen,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    fn acquire(&mut self) -> Option<ModelPermit> {
        if let Phase::Open { until: Some(u) } = self.phase
            && self.now >= u
        {
            self.go(Phase::HalfOpen {
                succeeded: 0,
                next_id: 0,
                out: vec![],
            });
        }
        let (now, later, probes, epoch) = (self.now, self.later(), self.probes, self.epoch);
        match &mut self.phase {
            Phase::Closed => Some(ModelPermit { epoch, probe: None }),
            Phase::Open { .. } => None,
            Phase::HalfOpen {
                succeeded,
                next_id,
                out,
            } => {
                let live = out
                    .iter()
                    .filter(|(_, frees)| frees.is_none_or(|f| now < f))
                    .count() as u64;
                if *succeeded + live < u64::from(probes) {
                    *next_id += 1;
                    out.push((*next_id, later));
                    Some(ModelPermit {
                        epoch,
                        probe: Some(*next_id),
                    })
                } else {
                    None
                }
            }
        }
    }

    fn record(&mut self, p: ModelPermit, ok: bool) {
        if p.epoch != self.epoch {
            return;
        }
        match &mut self.phase {
            Phase::Closed => {
                let trip = match self.mode {
                    Mode::Consecutive(n) => {
                        self.consecutive = if ok { 0 } else { self.consecutive + 1 };
                        self.consecutive >= n
                    }
                    Mode::Rate {
                        rate,
                        window,
                        minimum_calls,
                    } => {
                        self.window.push_back(!ok);
                        if self.window.len() > window as usize {
                            self.window.pop_front();
                        }
                        let calls = self.window.len() as u64;
                        let failures = self.window.iter().filter(|f| **f).count() as u64;
                        let ppm = (rate * 1e6).round() as u64;
                        calls >= u64::from(minimum_calls) && failures * 1_000_000 >= ppm * calls
                    }
                };
                if trip {
                    self.open();
                }
            }
            Phase::HalfOpen { succeeded, out, .. } => {
                let Some(id) = p.probe else { return };
                let Some(i) = out.iter().position(|(o, _)| *o == id) else {
                    return;
                };
                out.remove(i);
                if ok {
                    *succeeded += 1;
                    if *succeeded >= u64::from(self.probes) {
                        self.go(Phase::Closed);
                    }
                } else {
                    self.open();
                }
            }
            Phase::Open { .. } => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn any_mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        prop_oneof![1..=4u32, Just(u32::MAX)].prop_map(Mode::Consecutive),
        (
            prop::sample::select(vec![0.1, 0.25, 1.0 / 3.0, 0.5, 0.55, 0.6, 1.0]),
            1..=10u32
        )
            .prop_flat_map(|(rate, window)| {
                (1..=window).prop_map(move |minimum_calls| Mode::Rate {
                    rate,
                    window,
                    minimum_calls,
                })
            }),
    ]
}

fn any_reset() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => prop::sample::select(vec![
            Duration::from_nanos(1),
            Duration::from_millis(1),
            Duration::from_secs(1),
            Duration::from_secs(30),
        ]),
        1 => Just(Duration::MAX),
        1 => Just(YEARS_300G),
    ]
}

fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Acquire),
        4 => (any::<usize>(), prop::bool::weighted(0.4)).prop_map(|(i, ok)| Op::Record(i, ok)),
        2 => Just(Op::State),
        3 => prop::sample::select(vec![
            Step::Zero,
            Step::Nano,
            Step::Milli,
            Step::Half,
            Step::Reset,
            Step::ResetMinusNano,
            Step::ResetPlusNano,
            Step::Hour,
            Step::Century,
        ])
        .prop_map(Op::Advance),
    ]
}

fn build(mode: Mode, reset: Duration, probes: u32) -> CircuitBreaker {
    let b = CircuitBreaker::builder()
        .reset_timeout(reset)
        .half_open_probes(probes);
    match mode {
        Mode::Consecutive(n) => b.failure_threshold(n),
        Mode::Rate {
            rate,
            window,
            minimum_calls,
        } => b
            .failure_rate(rate)
            .sliding_window(window)
            .minimum_calls(minimum_calls),
    }
    .build()
    .unwrap()
}

fn step(s: Step, reset: Duration) -> Duration {
    // A reset_timeout too long to wait out is not advanced by (the paused clock cannot represent
    // it either): a century stands in.
    let reset = if reset > 1000 * YEAR {
        100 * YEAR
    } else {
        reset
    };
    match s {
        Step::Zero => Duration::ZERO,
        Step::Nano => Duration::from_nanos(1),
        Step::Milli => Duration::from_millis(1),
        Step::Half => reset / 2,
        Step::Reset => reset,
        Step::ResetMinusNano => reset.saturating_sub(Duration::from_nanos(1)),
        Step::ResetPlusNano => reset + Duration::from_nanos(1),
        Step::Hour => Duration::from_secs(3600),
        Step::Century => 100 * YEAR,
    }
}

fn run(mode: Mode, reset: Duration, probes: u32, ops: &[Op]) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let real = build(mode, reset, probes);
        let mut model = Model::new(mode, reset, probes);
        let mut held: Vec<(Permit, ModelPermit)> = vec![];
        for (n, op) in ops.iter().enumerate() {
            match *op {
                Op::Acquire => {
                    let r = real.try_acquire();
                    let m = model.acquire();
                    prop_assert_eq!(r.is_ok(), m.is_some(), "step {}: {:?}", n, op);
                    if let (Ok(r), Some(m)) = (r, m) {
                        held.push((r, m));
                    }
                }
                Op::Record(i, ok) if !held.is_empty() => {
                    let (r, m) = held.remove(i % held.len());
                    real.record(r, ok);
                    model.record(m, ok);
                }
                Op::Record(..) | Op::State => {}
                Op::Advance(s) => {
                    let d = step(s, reset);
                    tokio::time::advance(d).await;
                    model.now += d;
                }
            }
            // Every step ends with a read of the state, which must not change what follows.
            prop_assert_eq!(real.state(), model.state(), "step {}: {:?}", n, op);
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_breaker_follows_its_state_machine(
        mode in any_mode(),
        reset in any_reset(),
        probes in prop_oneof![1..=3u32, Just(u32::MAX)],
        ops in prop::collection::vec(any_op(), 1..80),
    ) {
        run(mode, reset, probes, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The scenarios of the issue, spelled out (each also reachable by the model test)
// ---------------------------------------------------------------------------------------------

fn opened(reset: Duration, probes: u32) -> CircuitBreaker {
    let b = build(Mode::Consecutive(1), reset, probes);
    let p = b.try_acquire().unwrap();
    b.record(p, false);
    b
}

#[tokio::test(start_paused = true)]
async fn a_huge_reset_timeout_keeps_the_breaker_open_without_panicking() {
    for reset in [Duration::MAX, YEARS_300G, NEVER] {
        let b = opened(reset, 1);
        assert_eq!(b.state(), BreakerState::Open);
        tokio::time::advance(100 * YEAR).await;
        assert_eq!(b.state(), BreakerState::Open, "{reset:?}");
        assert!(b.try_acquire().is_err());
    }
}

#[tokio::test(start_paused = true)]
async fn slow_traffic_still_closes_a_half_open_breaker() {
    // Three probes needed; one call arrives per reset_timeout. Each probe succeeds.
    let reset = Duration::from_secs(10);
    let b = opened(reset, 3);
    for _ in 0..3 {
        tokio::time::advance(reset).await;
        let probe = b.try_acquire().unwrap();
        b.record(probe, true);
    }
    assert_eq!(b.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_probe_slower_than_reset_timeout_still_counts() {
    let reset = Duration::from_secs(10);
    let b = opened(reset, 1);
    tokio::time::advance(reset).await;
    let probe = b.try_acquire().unwrap();
    tokio::time::advance(3 * reset).await;
    b.record(probe, true);
    assert_eq!(b.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn reading_the_state_does_not_discard_the_probe_in_flight() {
    let reset = Duration::from_secs(10);
    let b = opened(reset, 2);
    tokio::time::advance(reset).await;
    let first = b.try_acquire().unwrap();
    b.record(first, true);
    let second = b.try_acquire().unwrap();
    tokio::time::advance(reset).await;
    // A health check reads the state while the second probe is out.
    assert_eq!(b.state(), BreakerState::HalfOpen);
    b.record(second, true);
    assert_eq!(b.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn only_a_lost_probe_frees_its_slot() {
    let reset = Duration::from_secs(10);
    let b = opened(reset, 1);
    tokio::time::advance(reset).await;
    let lost = b.try_acquire().unwrap();
    tokio::time::advance(Duration::from_nanos(9_999_999_999)).await;
    assert!(b.try_acquire().is_err(), "the probe is not lost yet");
    tokio::time::advance(Duration::from_nanos(1)).await;
    let next = b
        .try_acquire()
        .expect("a probe out for reset_timeout frees its slot");
    b.record(next, true);
    assert_eq!(b.state(), BreakerState::Closed);
    b.record(lost, false); // from before the transition: ignored
    assert_eq!(b.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_failure_rate_of_55_percent_trips_at_55_failures_in_100() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.55)
        .sliding_window(100)
        .build()
        .unwrap();
    for i in 0..100 {
        let p = b.try_acquire().unwrap();
        b.record(p, i >= 55);
    }
    assert_eq!(b.state(), BreakerState::Open);
    for rate in [0.07, 0.1, 0.3, 0.7, 0.9] {
        let b = CircuitBreaker::builder()
            .failure_rate(rate)
            .sliding_window(100)
            .build()
            .unwrap();
        let failures = (rate * 100.0_f64).round() as u32;
        for i in 0..100 {
            let p = b.try_acquire().unwrap();
            b.record(p, i >= failures);
        }
        assert_eq!(b.state(), BreakerState::Open, "{rate}");
    }
}

#[tokio::test(start_paused = true)]
async fn u32_max_settings_build_and_work() {
    let b = CircuitBreaker::builder()
        .failure_threshold(u32::MAX)
        .half_open_probes(u32::MAX)
        .build()
        .unwrap();
    for _ in 0..1000 {
        let p = b.try_acquire().unwrap();
        b.record(p, false);
    }
    assert_eq!(b.state(), BreakerState::Closed);
    // A huge window is not allocated up front.
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .sliding_window(u32::MAX)
        .minimum_calls(2)
        .build()
        .unwrap();
    let p = b.try_acquire().unwrap();
    b.record(p, true);
    let p = b.try_acquire().unwrap();
    b.record(p, false);
    assert_eq!(b.state(), BreakerState::Open);
}

#[test]
fn a_rate_below_a_millionth_names_failure_rate() {
    for rate in [1e-9, f64::NAN, f64::INFINITY, -0.5, 0.0, 1.000_001] {
        let err = CircuitBreaker::builder()
            .failure_rate(rate)
            .build()
            .unwrap_err();
        assert_eq!(err.field(), "failure_rate", "{rate}");
    }
}
