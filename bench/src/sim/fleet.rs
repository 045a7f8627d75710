//! A fleet, simulated: 2,000 requests a second spread over N instances of one service (10, 200
//! or 2,000; Zipf-skewed; or autoscaling from 50 to 200), each instance with **its own** guards,
//! as a retry library's guards are per process. Every call makes up to 3 attempts with full
//! jitter; every decision is the runtime's own ([`decide`] with a real [`Engine`] per call, the
//! real [`RetryBudget`] and [`AdaptiveThrottle`]), on a paused tokio clock, as in
//! [`overload`](super::overload).
//!
//! The backend serves `capacity` attempts a second (a work bucket, 0.1 s of burst); an attempt
//! that finds it empty is rejected, and rejecting costs it a tenth of serving (it wastes work
//! past its capacity). Answers come two network hops (|N(10 ms, 2 ms)| each) later. After a
//! minute of normal traffic, one fault: a 30 s outage (every attempt fails), a 60 s partial
//! failure (half of them fail), a 30 s overload (twice the traffic), or a 60 s zone fault (the
//! instances of one zone of three reach a zone-local replica that fails every attempt; the
//! other zones are healthy).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::{RngExt, SeedableRng, rngs::SmallRng};
use rand_distr::{Distribution, Exp, Normal};
use reattempt::{AdaptiveThrottle, FnHooks, Jitter, RetryBudget, RetryPolicy};
use retry_runtime::__private::{Decision, Engine, Guards, ThrottleAdmission, admit, begin, decide};
use tokio::time::Instant;

/// The fleet's requests per second (all instances together).
pub const RATE: f64 = 2000.0;

/// Attempts per call at most.
pub const MAX_ATTEMPTS: u32 = 3;

/// How the requests are spread over the instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fleet {
    /// `n` instances, each taking the same share.
    Uniform(u32),
    /// `n` instances, instance `i` taking a share proportional to `1 / (i + 1)` (Zipf, s = 1).
    Zipf(u32),
    /// 50 instances until 5 s into the fault, then 5 more a second up to 200; a new instance
    /// starts with new guards.
    Autoscale,
}

impl Fleet {
    /// The fleets of the tables.
    pub const ALL: [Fleet; 5] = [
        Fleet::Uniform(10),
        Fleet::Uniform(200),
        Fleet::Uniform(2000),
        Fleet::Zipf(2000),
        Fleet::Autoscale,
    ];

    /// A short label.
    pub fn label(self) -> String {
        match self {
            Fleet::Uniform(n) => format!("N={n}"),
            Fleet::Zipf(n) => format!("N={n} zipf"),
            Fleet::Autoscale => "50→200".to_owned(),
        }
    }

    fn max(self) -> u32 {
        match self {
            Fleet::Uniform(n) | Fleet::Zipf(n) => n,
            Fleet::Autoscale => 200,
        }
    }
}

/// The incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 30 s in which every attempt fails.
    Outage,
    /// 60 s in which half of the attempts fail.
    Partial,
    /// 30 s of twice the traffic.
    Overload,
    /// 60 s in which the attempts of one zone's instances (every third) fail.
    Zone,
}

impl Fault {
    /// All of them.
    pub const ALL: [Fault; 4] = [Fault::Outage, Fault::Partial, Fault::Overload, Fault::Zone];

    /// A short label.
    pub fn label(self) -> &'static str {
        match self {
            Fault::Outage => "outage 30 s",
            Fault::Partial => "partial 60 s",
            Fault::Overload => "overload 30 s",
            Fault::Zone => "zone 60 s",
        }
    }

    /// How long it lasts.
    pub fn len(self) -> Duration {
        match self {
            Fault::Outage | Fault::Overload => Duration::from_secs(30),
            Fault::Partial | Fault::Zone => Duration::from_secs(60),
        }
    }
}

/// The guards each instance holds (or, for the `Shared` ones, the fleet holds once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Guard {
    /// Retries, no guard.
    None,
    /// `RetryBudget::aws_standard()`: 500 tokens, 5 a retry.
    AwsStandard,
    /// The same with 50 tokens.
    Aws50,
    /// `RetryBudget::fleet()`: 25 tokens, starting with 5.
    AwsFleet,
    /// `RetryBudget::finagle()`: 20 % + 10 retries a second.
    Finagle,
    /// `RetryBudget::ratio(0.2).min_retries_per_second(x)`.
    Ratio(f64),
    /// `AdaptiveThrottle`, the SRE book's as written (`forget_outage(false)`), over `window`.
    ThrottleBook(u64),
    /// `AdaptiveThrottle::builder().build()`: the default (forgets an outage).
    Throttle,
    /// The default throttle and `RetryBudget::ratio(0.2)`: the recommended pair.
    ThrottleRatio,
    /// One default throttle shared by the whole fleet (what a Redis-backed one would do).
    SharedThrottle,
}

impl Guard {
    /// Every guard and setting the tables show.
    pub const ALL: [Guard; 12] = [
        Guard::None,
        Guard::AwsStandard,
        Guard::Aws50,
        Guard::AwsFleet,
        Guard::Finagle,
        Guard::Ratio(0.1),
        Guard::Ratio(0.0),
        Guard::ThrottleBook(120),
        Guard::ThrottleBook(10),
        Guard::Throttle,
        Guard::ThrottleRatio,
        Guard::SharedThrottle,
    ];

    /// A short label.
    pub fn label(self) -> String {
        match self {
            Guard::None => "no guard".to_owned(),
            Guard::AwsStandard => "budget aws_standard (500)".to_owned(),
            Guard::Aws50 => "budget aws, 50 tokens".to_owned(),
            Guard::AwsFleet => "budget fleet (25, starts at 5)".to_owned(),
            Guard::Finagle => "budget finagle (20 % + 10/s)".to_owned(),
            Guard::Ratio(0.0) => "budget ratio 20 %, no floor".to_owned(),
            Guard::Ratio(floor) => format!("budget ratio 20 % + {floor}/s"),
            Guard::ThrottleBook(w) => format!("throttle, book, {w} s window"),
            Guard::Throttle => "throttle default (forgets outage)".to_owned(),
            Guard::ThrottleRatio => "throttle default + ratio 20 %".to_owned(),
            Guard::SharedThrottle => "one throttle for the fleet".to_owned(),
        }
    }

    fn budget(self) -> Option<RetryBudget> {
        let b = match self {
            Guard::AwsStandard => RetryBudget::aws_standard().build(),
            Guard::Aws50 => RetryBudget::aws_standard().max_tokens(50).build(),
            Guard::AwsFleet => RetryBudget::fleet().build(),
            Guard::Finagle => RetryBudget::finagle().build(),
            Guard::Ratio(floor) => RetryBudget::ratio(0.2)
                .min_retries_per_second(floor)
                .build(),
            Guard::ThrottleRatio => RetryBudget::ratio(0.2).build(),
            _ => return None,
        };
        Some(b.expect("valid budget"))
    }

    fn throttle(self) -> Option<AdaptiveThrottle> {
        let b = match self {
            Guard::ThrottleBook(secs) => AdaptiveThrottle::builder()
                .window(Duration::from_secs(secs))
                .forget_outage(false),
            Guard::Throttle | Guard::ThrottleRatio | Guard::SharedThrottle => {
                AdaptiveThrottle::builder()
            }
            _ => return None,
        };
        Some(b.build().expect("valid throttle"))
    }
}

/// One run's setting.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// The instances.
    pub fleet: Fleet,
    /// The incident.
    pub fault: Fault,
    /// When it begins (after a minute of normal traffic, so that every guard has a history).
    pub fault_start: Duration,
    /// How long the run goes on after it, for the recovery.
    pub after: Duration,
    /// Attempts per second the backend serves.
    pub capacity: f64,
    /// What rejecting an attempt costs the backend, as a share of serving one.
    pub reject_cost: f64,
    /// The seed (the same arrivals for every guard).
    pub seed: u64,
}

impl Scenario {
    /// The tables' setting for `fleet` and `fault`: the fault at 60 s, 120 s after it; a backend
    /// of 3,000 attempts a second (1.5 × the traffic).
    pub fn standard(fleet: Fleet, fault: Fault) -> Scenario {
        Scenario {
            fleet,
            fault,
            fault_start: Duration::from_secs(60),
            after: Duration::from_secs(120),
            capacity: 3000.0,
            reject_cost: 0.1,
            seed: 2026,
        }
    }

    /// When the fault ends.
    pub fn fault_end(&self) -> Duration {
        self.fault_start + self.fault.len()
    }

    /// When calls stop starting.
    pub fn end(&self) -> Duration {
        self.fault_end() + self.after
    }

    fn during(&self, t: Duration) -> bool {
        t >= self.fault_start && t < self.fault_end()
    }

    fn rate_at(&self, t: Duration) -> f64 {
        if self.fault == Fault::Overload && self.during(t) {
            2.0 * RATE
        } else {
            RATE
        }
    }

    fn live_at(&self, t: Duration) -> u32 {
        match self.fleet {
            Fleet::Uniform(n) | Fleet::Zipf(n) => n,
            Fleet::Autoscale => {
                let from = self.fault_start + Duration::from_secs(5);
                let grown = t.saturating_sub(from).as_secs() * 5;
                u32::try_from(50 + grown).unwrap_or(u32::MAX).min(200)
            }
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Attempts that left the instances during the fault ÷ calls started in it.
    pub attempts_per_request: f64,
    /// Share of the calls started during the fault that succeeded.
    pub ok_during: f64,
    /// Share of the calls of the healthy zones started during a zone fault that succeeded (the
    /// other faults: of all calls).
    pub ok_healthy: f64,
    /// From the fault's end to the end of the last second (by call start) in which more than
    /// 1 % of the calls failed; `None` if the run ended first.
    pub recovery: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrival,
    Attempt { call: u32 },
    Answer { call: u32, ok: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallError {
    Failed,
    Rejected,
}

struct Call<'p> {
    engine: Engine<'p>,
    instance: u32,
    started: Duration,
}

struct Instance {
    budget: Option<RetryBudget>,
    throttle: Option<AdaptiveThrottle>,
}

/// The second `d` falls in.
fn sec(d: Duration) -> usize {
    usize::try_from(d.as_secs()).unwrap_or(usize::MAX)
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `guard` through `scenario` and summarizes it. Must run on a current-thread tokio runtime
/// whose clock is paused (it advances that clock).
///
/// ```
/// use std::time::Duration;
/// use reattempt_bench::sim::fleet::{Fault, Fleet, Guard, Scenario, simulate};
///
/// let scenario = Scenario {
///     fault_start: Duration::from_secs(5),
///     after: Duration::from_secs(5),
///     ..Scenario::standard(Fleet::Uniform(10), Fault::Outage)
/// };
/// let runtime = tokio::runtime::Builder::new_current_thread()
///     .enable_time()
///     .start_paused(true)
///     .build()
///     .unwrap();
/// let none = runtime.block_on(simulate(&scenario, Guard::None));
/// assert!(none.attempts_per_request > 2.9, "every call makes its 3 attempts");
/// ```
///
/// # Panics
/// If the clock is not paused.
#[allow(clippy::too_many_lines, reason = "one event loop, read top to bottom")]
pub async fn simulate(scenario: &Scenario, guard: Guard) -> Summary {
    let policy = RetryPolicy::builder()
        .max_attempts(MAX_ATTEMPTS)
        .delay(Duration::from_millis(100))
        .max_delay(Duration::from_secs(2))
        .jitter(Jitter::Full)
        .build()
        .expect("a valid policy");
    reattempt::seed_rng(scenario.seed ^ 0x00C0_FFEE);
    let max = scenario.fleet.max() as usize;
    let shared = guard == Guard::SharedThrottle;
    let mut instances: Vec<Option<Instance>> = (0..max).map(|_| None).collect();
    let shared_throttle = guard.throttle();
    // Zipf: the cumulative weights.
    let zipf: Vec<f64> = match scenario.fleet {
        Fleet::Zipf(n) => (1..=n)
            .scan(0.0, |sum, i| {
                *sum += 1.0 / f64::from(i);
                Some(*sum)
            })
            .collect(),
        _ => Vec::new(),
    };

    let mut rng = SmallRng::seed_from_u64(scenario.seed);
    let mut net_rng = SmallRng::seed_from_u64(scenario.seed ^ 0x0AE7);
    let mut fault_rng = SmallRng::seed_from_u64(scenario.seed ^ 0xFA17);
    let hop: Normal<f64> = Normal::new(0.010, 0.002).expect("a valid normal");
    let mut answer_after =
        || Duration::from_secs_f64(hop.sample(&mut net_rng).abs() + hop.sample(&mut net_rng).abs());

    let capacity = scenario.capacity;
    let (mut tokens, burst, floor) = (capacity / 10.0, capacity / 10.0, -capacity);
    let mut last_refill = Duration::ZERO;

    let end = scenario.end();
    let secs = usize::try_from(end.as_secs()).expect("a few minutes") + 1;
    // Per second of call start: calls, failed calls (the healthy zones' apart).
    let mut started = vec![0u32; secs];
    let mut failed = vec![0u32; secs];
    let (mut healthy, mut healthy_ok) = (0u32, 0u32);
    let mut sent_during = 0u64;
    let mut calls: Vec<Call<'_>> = Vec::new();

    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, at: Duration, event: Event| {
        seq += 1;
        queue.push(Reverse((ns(at), seq, event)));
    };
    push(&mut queue, Duration::ZERO, Event::Arrival);

    let t0 = Instant::now();
    while let Some(Reverse((at, _, event))) = queue.pop() {
        let now = Duration::from_nanos(at);
        let clock = Instant::now();
        if t0 + now > clock {
            tokio::time::advance(t0 + now - clock).await;
        }
        let call = match event {
            Event::Arrival => {
                if now >= end {
                    continue;
                }
                let gap = Exp::new(scenario.rate_at(now)).expect("a positive rate");
                push(
                    &mut queue,
                    now + Duration::from_secs_f64(gap.sample(&mut rng)),
                    Event::Arrival,
                );
                let instance = match scenario.fleet {
                    Fleet::Zipf(_) => {
                        let x = rng.random::<f64>() * zipf[zipf.len() - 1];
                        u32::try_from(zipf.partition_point(|w| *w < x)).expect("≤ 2000")
                    }
                    _ => rng.random_range(0..scenario.live_at(now)),
                };
                started[sec(now)] += 1;
                calls.push(Call {
                    engine: Engine::new(&policy),
                    instance,
                    started: now,
                });
                u32::try_from(calls.len() - 1).expect("fewer than 2^32 calls")
            }
            Event::Attempt { call } => call,
            Event::Answer { call, ok } => {
                let c = &mut calls[call as usize];
                let i = instances[c.instance as usize]
                    .as_ref()
                    .expect("made at the call's first attempt");
                let throttle = if shared {
                    shared_throttle.as_ref()
                } else {
                    i.throttle.as_ref()
                };
                let result = if ok { Ok(()) } else { Err(CallError::Failed) };
                let mut guards = Guards::NONE;
                if let Some(t) = throttle {
                    guards = guards.throttle(t, ThrottleAdmission::Admitted);
                }
                if let Some(b) = &i.budget {
                    guards = guards.budget(b);
                }
                match decide(
                    &mut c.engine,
                    "fleet",
                    &mut FnHooks::of(&result),
                    result,
                    guards,
                ) {
                    Decision::Stop(result) => {
                        let (s, z) = (c.started, c.instance);
                        record(
                            scenario,
                            s,
                            z,
                            result.is_ok(),
                            &mut failed,
                            &mut healthy,
                            &mut healthy_ok,
                        );
                    }
                    Decision::Retry(delay) => {
                        push(&mut queue, now + delay, Event::Attempt { call });
                    }
                }
                continue;
            }
        };
        let c = &mut calls[call as usize];
        let i = instances[c.instance as usize].get_or_insert_with(|| Instance {
            budget: guard.budget(),
            throttle: if shared { None } else { guard.throttle() },
        });
        let throttle = if shared {
            shared_throttle.as_ref()
        } else {
            i.throttle.as_ref()
        };
        if let Some(t) = throttle {
            let admission = admit(&c.engine, None, Some(t), false, false).throttle();
            if admission.rejected() {
                let mut rejection = Guards::NONE.throttle(t, admission);
                if let Some(b) = &i.budget {
                    rejection = rejection.budget(b);
                }
                let outcome: Result<(), _> = Err(CallError::Rejected);
                let _ = decide(
                    &mut c.engine,
                    "fleet",
                    &mut FnHooks::of(&outcome).retry_if(|_| false),
                    outcome,
                    rejection,
                );
                let (s, z) = (c.started, c.instance);
                record(
                    scenario,
                    s,
                    z,
                    false,
                    &mut failed,
                    &mut healthy,
                    &mut healthy_ok,
                );
                continue;
            }
        }
        begin(&mut c.engine, false);
        if scenario.during(now) {
            sent_during += 1;
        }
        // The backend: down, failing some, a zone's replica down, or serving from its bucket.
        let ok = match scenario.fault {
            Fault::Outage if scenario.during(now) => false,
            Fault::Partial if scenario.during(now) => fault_rng.random::<f64>() >= 0.5,
            Fault::Zone if scenario.during(now) && c.instance.is_multiple_of(3) => false,
            _ => {
                let dt = now.saturating_sub(last_refill).as_secs_f64();
                last_refill = now;
                tokens = (tokens + dt * capacity).min(burst);
                if tokens >= 1.0 {
                    tokens -= 1.0;
                    true
                } else {
                    tokens = (tokens - scenario.reject_cost).max(floor);
                    false
                }
            }
        };
        push(&mut queue, now + answer_after(), Event::Answer { call, ok });
    }

    let (from, to) = (sec(scenario.fault_start), sec(scenario.fault_end()));
    let calls_during: u32 = started[from..to].iter().sum();
    let failed_during: u32 = failed[from..to].iter().sum();
    let mut last_bad = None;
    for s in to..sec(end) {
        if started[s] > 0 && f64::from(failed[s]) > 0.01 * f64::from(started[s]) {
            last_bad = Some(s + 1);
        }
    }
    let recovery = match last_bad {
        None => Some(Duration::ZERO),
        Some(s) if s >= sec(end) => None,
        Some(s) => Some(Duration::from_secs((s - to) as u64)),
    };
    #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
    Summary {
        attempts_per_request: sent_during as f64 / f64::from(calls_during),
        ok_during: 1.0 - f64::from(failed_during) / f64::from(calls_during),
        ok_healthy: f64::from(healthy_ok) / f64::from(healthy.max(1)),
        recovery,
    }
}

/// Counts a call that ended.
fn record(
    scenario: &Scenario,
    started: Duration,
    instance: u32,
    ok: bool,
    failed: &mut [u32],
    healthy: &mut u32,
    healthy_ok: &mut u32,
) {
    if !ok {
        failed[sec(started)] += 1;
    }
    if scenario.during(started) && (scenario.fault != Fault::Zone || !instance.is_multiple_of(3)) {
        *healthy += 1;
        *healthy_ok += u32::from(ok);
    }
}
