//! A retry storm, simulated: many clients call one dependency that goes fully down for a while
//! and then comes back with a fixed capacity. Every retry decision is the runtime's own:
//! [`decide`] (the function behind `#[retryable]` and `Retry`) with a real [`Engine`] per logical
//! call, a shared [`RetryBudget`] and a shared [`CircuitBreaker`]. The simulation is a
//! deterministic discrete-event loop on a paused tokio clock, advanced to each event's time before
//! it is handled, so the breaker's `reset_timeout` runs on simulated time.
//!
//! The load is open: each client starts logical calls as a Poisson process, whether or not its
//! earlier calls have finished (a service answering its own users). An attempt reaches the
//! dependency when it starts, and its answer arrives two network hops (|N(10 ms, 2 ms)| each)
//! later: an error while the dependency is down, an overload error when its token bucket
//! (`capacity` per second, a tenth of a second of burst) is empty, a success otherwise. Both errors
//! are retryable. An attempt the open breaker rejects never reaches the dependency, and ends its
//! call (the runtime never retries a rejection).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::{SeedableRng, rngs::SmallRng};
use rand_distr::{Distribution, Exp, Normal};
use reattempt::runtime::Permit;
use reattempt::{CircuitBreaker, FnHooks, Jitter, RetryBudget, RetryPolicy};
use retry_runtime::__private::{Admission, Decision, Engine, Guards, begin, decide};
use tokio::time::Instant;

/// Width of one bin of the time series.
pub const BIN: Duration = Duration::from_millis(100);

/// The situation every strategy faces.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Clients, each starting one logical call per `call_interval` on average.
    pub clients: u32,
    /// The mean time between two calls of one client.
    pub call_interval: Duration,
    /// Attempts per second the dependency can serve once it is up.
    pub capacity: u32,
    /// When the outage begins.
    pub outage_start: Duration,
    /// How long the dependency is fully down.
    pub outage: Duration,
    /// When clients stop starting calls (the calls under way still finish).
    pub end: Duration,
    /// The seed of the arrivals (the same for every strategy) and of the jitter.
    pub seed: u64,
}

impl Scenario {
    /// When the dependency comes back.
    pub fn recovery(&self) -> Duration {
        self.outage_start + self.outage
    }

    fn down_at(&self, t: Duration) -> bool {
        t >= self.outage_start && t < self.recovery()
    }
}

/// How the clients retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One attempt per call.
    NoRetry,
    /// The retry policy with jitter `none`.
    NoJitter,
    /// The retry policy with full jitter.
    FullJitter,
    /// Full jitter, every retry paid from one shared `RetryBudget`.
    Budget,
    /// As `Budget`, every attempt also passing one shared `CircuitBreaker`.
    BudgetBreaker,
}

impl Strategy {
    /// All of them, in the order of the table.
    pub const ALL: [Strategy; 5] = [
        Strategy::NoRetry,
        Strategy::NoJitter,
        Strategy::FullJitter,
        Strategy::Budget,
        Strategy::BudgetBreaker,
    ];

    /// A short label for tables and the CSV.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::NoRetry => "no retry",
            Strategy::NoJitter => "retries, no jitter",
            Strategy::FullJitter => "retries, full jitter",
            Strategy::Budget => "full jitter + budget",
            Strategy::BudgetBreaker => "full jitter + budget + breaker",
        }
    }
}

/// The retry schedule of every retrying strategy: 5 attempts, 100 ms doubling up to 2 s.
pub const MAX_ATTEMPTS: u32 = 5;

/// The policy for `strategy`.
///
/// # Panics
/// Never: the settings are valid.
pub fn policy(strategy: Strategy) -> RetryPolicy {
    let b = RetryPolicy::builder()
        .max_attempts(MAX_ATTEMPTS)
        .delay(Duration::from_millis(100))
        .max_delay(Duration::from_secs(2));
    match strategy {
        Strategy::NoRetry => b.max_attempts(1),
        Strategy::NoJitter => b.jitter(Jitter::None),
        Strategy::FullJitter | Strategy::Budget | Strategy::BudgetBreaker => b.jitter(Jitter::Full),
    }
    .build()
    .expect("a valid policy")
}

/// The shared budget: the AWS SDK's defaults (500 tokens, 5 per retry, 1 back per success).
///
/// # Panics
/// Never: the settings are valid.
pub fn budget() -> RetryBudget {
    RetryBudget::builder().build().expect("valid budget")
}

/// The shared breaker: opens when half of the last 100 attempts (at least 20) failed, probes
/// with 3 calls after 1 s.
///
/// # Panics
/// Never: the settings are valid.
pub fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_rate(0.5)
        .sliding_window(100)
        .minimum_calls(20)
        .reset_timeout(Duration::from_secs(1))
        .half_open_probes(3)
        .name("dependency")
        .build()
        .expect("valid breaker")
}

/// Per-bin counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bin {
    /// Attempts that reached the dependency.
    pub attempts: u32,
    /// Of those, successes.
    pub ok: u32,
    /// Of those, shed for lack of capacity.
    pub shed: u32,
    /// Attempts the open breaker stopped before they left the client.
    pub rejected: u32,
}

/// One logical call, as it ended.
#[derive(Debug, Clone, Copy)]
pub struct CallRecord {
    /// When it started.
    pub started: Duration,
    /// Attempts that reached the dependency.
    pub attempts: u32,
    /// Whether it succeeded.
    pub ok: bool,
}

/// What one strategy's run produced.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The strategy.
    pub strategy: Strategy,
    /// Counts per [`BIN`], from t = 0.
    pub bins: Vec<Bin>,
    /// Every logical call.
    pub calls: Vec<CallRecord>,
    /// The last time an attempt of a call started before recovery reached the dependency.
    pub last_backlog_attempt: Duration,
    /// The last time the dependency shed an attempt for lack of capacity.
    pub last_shed: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A client starts a logical call.
    Arrival { client: u32 },
    /// A call makes its next attempt.
    Attempt { call: u32 },
    /// An attempt's answer reaches its call.
    Answer { call: u32, outcome: Outcome },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Ok,
    Down,
    Overloaded,
}

/// The dependency's errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DependencyError {
    Down,
    Overloaded,
    BreakerOpen,
}

struct InFlight<'p> {
    engine: Engine<'p>,
    permit: Option<Permit>,
    record: CallRecord,
}

/// A token bucket refilled continuously.
struct Bucket {
    tokens: f64,
    burst: f64,
    rate: f64,
    last: Duration,
}

impl Bucket {
    fn take(&mut self, now: Duration) -> bool {
        let dt = now.saturating_sub(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `strategy` through `scenario`. Must run on a current-thread tokio runtime whose clock is
/// paused (it advances that clock); the jitter is drawn from this thread's generator, reseeded
/// here.
///
/// # Panics
/// If the clock is not paused, or time went backwards (a bug).
#[allow(clippy::too_many_lines, reason = "one event loop, read top to bottom")]
pub async fn simulate(scenario: &Scenario, strategy: Strategy) -> Trace {
    let policy = policy(strategy);
    let budget = budget();
    let breaker = breaker();
    let use_budget = matches!(strategy, Strategy::Budget | Strategy::BudgetBreaker);
    let use_breaker = strategy == Strategy::BudgetBreaker;
    reattempt::seed_rng(scenario.seed ^ 0x00C0_FFEE);

    let mut arrivals_rng = SmallRng::seed_from_u64(scenario.seed);
    let mut net_rng = SmallRng::seed_from_u64(scenario.seed ^ 0x0AE7);
    let gap = Exp::new(1.0 / scenario.call_interval.as_secs_f64()).expect("a positive rate");
    let hop: Normal<f64> = Normal::new(0.010, 0.002).expect("a valid normal");
    let mut answer_after =
        || Duration::from_secs_f64(hop.sample(&mut net_rng).abs() + hop.sample(&mut net_rng).abs());
    let capacity = f64::from(scenario.capacity);
    let mut bucket = Bucket {
        tokens: capacity / 10.0,
        burst: capacity / 10.0,
        rate: capacity,
        last: Duration::ZERO,
    };

    let horizon = scenario.end + Duration::from_secs(10);
    let n_bins = usize::try_from(horizon.as_nanos() / BIN.as_nanos()).expect("a few hundred bins");
    let bin_of = |t: Duration| usize::try_from(t.as_nanos() / BIN.as_nanos()).unwrap_or(usize::MAX);
    let mut trace = Trace {
        strategy,
        bins: vec![Bin::default(); n_bins],
        calls: Vec::new(),
        last_backlog_attempt: Duration::ZERO,
        last_shed: Duration::ZERO,
    };
    let mut calls: Vec<InFlight<'_>> = Vec::new();

    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, at: Duration, event: Event| {
        seq += 1;
        queue.push(Reverse((ns(at), seq, event)));
    };
    for client in 0..scenario.clients {
        let first = Duration::from_secs_f64(gap.sample(&mut arrivals_rng));
        push(&mut queue, first, Event::Arrival { client });
    }

    let t0 = Instant::now();
    while let Some(Reverse((at, _, event))) = queue.pop() {
        let now = Duration::from_nanos(at);
        let clock = Instant::now();
        assert!(t0 + now >= clock, "time must move forward");
        if t0 + now > clock {
            tokio::time::advance(t0 + now - clock).await;
        }
        let bin = bin_of(now).min(n_bins - 1);
        let call = match event {
            Event::Arrival { client } => {
                if now >= scenario.end {
                    continue;
                }
                let next = now + Duration::from_secs_f64(gap.sample(&mut arrivals_rng));
                push(&mut queue, next, Event::Arrival { client });
                calls.push(InFlight {
                    engine: Engine::new(&policy),
                    permit: None,
                    record: CallRecord {
                        started: now,
                        attempts: 0,
                        ok: false,
                    },
                });
                u32::try_from(calls.len() - 1).expect("fewer than 2^32 calls")
            }
            Event::Attempt { call } => call,
            Event::Answer { call, outcome } => {
                let c = &mut calls[call as usize];
                let result = match outcome {
                    Outcome::Ok => Ok(()),
                    Outcome::Down => Err(DependencyError::Down),
                    Outcome::Overloaded => Err(DependencyError::Overloaded),
                };
                let mut guards = Guards::NONE;
                if use_breaker {
                    guards = guards.breaker(
                        &breaker,
                        c.permit
                            .take()
                            .map_or(Admission::NotAsked, Admission::Admitted),
                    );
                }
                if use_budget {
                    guards = guards.budget(&budget);
                }
                match decide(
                    &mut c.engine,
                    "storm",
                    &mut FnHooks::of(&result),
                    result,
                    guards,
                ) {
                    Decision::Stop(result) => {
                        c.record.ok = result.is_ok();
                        trace.calls.push(c.record);
                    }
                    Decision::Retry(delay) => {
                        push(&mut queue, now + delay, Event::Attempt { call });
                    }
                }
                continue;
            }
        };
        // The call makes an attempt now.
        let c = &mut calls[call as usize];
        if use_breaker {
            if let Ok(permit) = breaker.try_acquire() {
                c.permit = Some(permit);
            } else {
                // Rejected: no attempt leaves, and the call ends (as `Retry` does it).
                trace.bins[bin].rejected += 1;
                let rejected = Guards::NONE.breaker(&breaker, Admission::Rejected);
                let outcome: Result<(), _> = Err(DependencyError::BreakerOpen);
                let outcome = decide(
                    &mut c.engine,
                    "storm",
                    &mut FnHooks::of(&outcome).retry_if(|_| false),
                    outcome,
                    rejected,
                );
                assert!(matches!(outcome, Decision::Stop(Err(_))));
                trace.calls.push(c.record);
                continue;
            }
        }
        begin(&mut c.engine, false);
        c.record.attempts += 1;
        let b = &mut trace.bins[bin];
        b.attempts += 1;
        if c.record.started < scenario.recovery() {
            trace.last_backlog_attempt = now;
        }
        let outcome = if scenario.down_at(now) {
            Outcome::Down
        } else if bucket.take(now) {
            b.ok += 1;
            Outcome::Ok
        } else {
            b.shed += 1;
            trace.last_shed = now;
            Outcome::Overloaded
        };
        push(
            &mut queue,
            now + answer_after(),
            Event::Answer { call, outcome },
        );
    }
    trace
}

/// The table's numbers for one trace.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Attempts per second reaching the dependency before the outage (after a 2 s warm-up).
    pub before: f64,
    /// Attempts per second reaching the dependency during the outage.
    pub during: f64,
    /// Attempts reaching the dependency during the outage ÷ calls started during it.
    pub amplification: f64,
    /// Attempts per call, for the calls started during the outage.
    pub attempts_per_call: f64,
    /// The highest attempts per second (over one bin) in the 10 s after recovery.
    pub peak_after: f64,
    /// Mean attempts per second over the 10 s after recovery.
    pub mean_after: f64,
    /// From recovery until the last attempt of a call started before it, or the last attempt
    /// shed for capacity, whichever is later.
    pub drain: Duration,
    /// Share of the calls started during the outage that failed.
    pub failed_during: f64,
    /// Share of the calls started in the 10 s after recovery that failed.
    pub failed_after: f64,
}

impl Summary {
    /// The mean of each number over several runs.
    pub fn mean(runs: &[Summary]) -> Summary {
        #[allow(clippy::cast_precision_loss, reason = "a handful of runs")]
        let n = runs.len() as f64;
        let avg = |f: fn(&Summary) -> f64| runs.iter().map(f).sum::<f64>() / n;
        Summary {
            before: avg(|m| m.before),
            during: avg(|m| m.during),
            amplification: avg(|m| m.amplification),
            attempts_per_call: avg(|m| m.attempts_per_call),
            peak_after: avg(|m| m.peak_after),
            mean_after: avg(|m| m.mean_after),
            drain: Duration::from_secs_f64(avg(|m| m.drain.as_secs_f64())),
            failed_during: avg(|m| m.failed_during),
            failed_after: avg(|m| m.failed_after),
        }
    }

    /// Computes the summary of `trace`.
    pub fn of(scenario: &Scenario, trace: &Trace) -> Summary {
        let bin_secs = BIN.as_secs_f64();
        let idx = |t: Duration| usize::try_from(t.as_nanos() / BIN.as_nanos()).unwrap_or(0);
        let rate = |from: Duration, to: Duration| {
            let bins = &trace.bins[idx(from)..idx(to)];
            let total: u32 = bins.iter().map(|b| b.attempts).sum();
            #[allow(clippy::cast_precision_loss, reason = "a few hundred bins")]
            let secs = bins.len() as f64 * bin_secs;
            f64::from(total) / secs
        };
        let recovery = scenario.recovery();
        let after = recovery + Duration::from_secs(10);
        let share = |from: Duration, to: Duration, f: &dyn Fn(&CallRecord) -> f64| {
            let xs: Vec<f64> = trace
                .calls
                .iter()
                .filter(|c| c.started >= from && c.started < to)
                .map(f)
                .collect();
            #[allow(clippy::cast_precision_loss, reason = "fewer than 2^52 calls")]
            let n = xs.len() as f64;
            (xs.iter().sum::<f64>() / n, n)
        };
        let (attempts_per_call, started_during) =
            share(scenario.outage_start, recovery, &|c| f64::from(c.attempts));
        let outage_attempts: u32 = trace.bins[idx(scenario.outage_start)..idx(recovery)]
            .iter()
            .map(|b| b.attempts)
            .sum();
        let peak_after = trace.bins[idx(recovery)..idx(after)]
            .iter()
            .map(|b| f64::from(b.attempts) / bin_secs)
            .fold(0.0, f64::max);
        let failed = |c: &CallRecord| if c.ok { 0.0 } else { 1.0 };
        Summary {
            before: rate(Duration::from_secs(2), scenario.outage_start),
            during: rate(scenario.outage_start, recovery),
            amplification: f64::from(outage_attempts) / started_during,
            attempts_per_call,
            peak_after,
            mean_after: rate(recovery, after),
            drain: trace
                .last_backlog_attempt
                .max(trace.last_shed)
                .saturating_sub(recovery),
            failed_during: share(scenario.outage_start, recovery, &failed).0,
            failed_after: share(recovery, after, &failed).0,
        }
    }
}
