//! Partial overload, simulated: many clients call one backend of fixed capacity, offer it three
//! times that for a minute, then 0.8 times it. Rejecting a request still costs the backend a
//! fraction of serving one, so requests it turns away eat into what it can serve. Every decision
//! is the runtime's own, as in [`storm`]: [`decide`] with a real [`Engine`] per
//! logical call, and the real shared guards — [`RetryBudget`](reattempt::RetryBudget), [`CircuitBreaker`](reattempt::CircuitBreaker),
//! [`AdaptiveThrottle`] (asked through [`admit`], told through [`Guards::throttle`]) and
//! [`Bulkhead`] (a slot per call, held through its sleeps) — on a paused tokio clock.
//!
//! The backend is a work bucket refilled at `capacity` units per second (0.1 s of burst): an
//! arriving attempt is served when a whole unit is there (it costs 1), and rejected with an
//! overload error otherwise (it costs `reject_cost`; the debt may reach one second of capacity,
//! the backend's queue of rejection work, beyond which rejecting costs nothing more). Answers
//! arrive two network hops (|N(10 ms, 2 ms)| each) later; the overload error is retryable.
//! Attempts a client guard turns away never reach the backend and end their call.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::{SeedableRng, rngs::SmallRng};
use rand_distr::{Distribution, Exp, Normal};
use reattempt::runtime::BulkheadPermit;
use reattempt::runtime::Permit;
use reattempt::{AdaptiveThrottle, Bulkhead, FnHooks, RetryPolicy};
use retry_runtime::__private::{
    Admission, Decision, Engine, Guards, ThrottleAdmission, admit, begin, decide,
};
use tokio::time::Instant;

use super::storm;

/// Width of one bin of the time series.
pub const BIN: Duration = Duration::from_millis(100);

/// The situation every strategy faces.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Clients, together offering `normal × capacity` calls per second (a Poisson process each).
    pub clients: u32,
    /// Attempts per second the backend serves when it rejects nothing.
    pub capacity: u32,
    /// What rejecting an attempt costs the backend, as a fraction of serving one.
    pub reject_cost: f64,
    /// The offered load outside the overload, as a multiple of `capacity`.
    pub normal: f64,
    /// The offered load during the overload, as a multiple of `capacity`.
    pub overload: f64,
    /// When the overload begins.
    pub overload_start: Duration,
    /// How long it lasts.
    pub overload_len: Duration,
    /// When clients stop starting calls (the calls under way still finish).
    pub end: Duration,
    /// The throttle's sliding window (its longest: see `throttle_window_requests`).
    pub throttle_window: Duration,
    /// The bound on the requests in the throttle's window.
    pub throttle_window_requests: u32,
    /// The seed of the arrivals (the same for every strategy), the network and the jitter.
    pub seed: u64,
}

impl Scenario {
    /// The issue's scenario: 2000 clients, a backend of 2000/s whose rejections cost a tenth of a
    /// request; 0.8× capacity for 10 s, 3× for 60 s, then 0.8× for 120 s; the throttle's default
    /// window (120 s, the SRE book's two minutes, or the last 512 requests if fewer).
    pub fn standard() -> Scenario {
        Scenario {
            clients: 2000,
            capacity: 2000,
            reject_cost: 0.1,
            normal: 0.8,
            overload: 3.0,
            overload_start: Duration::from_secs(10),
            overload_len: Duration::from_secs(60),
            end: Duration::from_secs(190),
            throttle_window: Duration::from_secs(120),
            throttle_window_requests: AdaptiveThrottle::DEFAULT_WINDOW_REQUESTS,
            seed: 2017,
        }
    }

    /// When the overload ends.
    pub fn overload_end(&self) -> Duration {
        self.overload_start + self.overload_len
    }

    /// Calls per second one client offers at `t`.
    fn rate_at(&self, t: Duration) -> f64 {
        let factor = if t >= self.overload_start && t < self.overload_end() {
            self.overload
        } else {
            self.normal
        };
        factor * f64::from(self.capacity) / f64::from(self.clients)
    }

    /// The next phase boundary after `t`, if any.
    fn next_boundary(&self, t: Duration) -> Option<Duration> {
        [self.overload_start, self.overload_end()]
            .into_iter()
            .find(|b| *b > t)
    }
}

/// How the clients call the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One attempt per call.
    NoRetry,
    /// Up to 5 attempts, full jitter ([`storm::policy`]).
    Retries,
    /// Retries, each paid from one shared `RetryBudget` ([`storm::budget`]).
    Budget,
    /// Retries, every attempt passing one shared `CircuitBreaker` ([`storm::breaker`]).
    Breaker,
    /// Retries, every attempt passing one shared `AdaptiveThrottle` ([`throttle`]).
    Throttle,
    /// The throttle and the budget.
    ThrottleBudget,
    /// Retries, every call holding a slot of one shared `Bulkhead` ([`bulkhead`]) from its first
    /// attempt to its end.
    Bulkhead,
}

impl Strategy {
    /// All of them, in the order of the table.
    pub const ALL: [Strategy; 7] = [
        Strategy::NoRetry,
        Strategy::Retries,
        Strategy::Budget,
        Strategy::Breaker,
        Strategy::Throttle,
        Strategy::ThrottleBudget,
        Strategy::Bulkhead,
    ];

    /// A short label for tables and the CSV.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::NoRetry => "no retry",
            Strategy::Retries => "retries",
            Strategy::Budget => "retries + budget",
            Strategy::Breaker => "retries + breaker",
            Strategy::Throttle => "retries + throttle",
            Strategy::ThrottleBudget => "retries + throttle + budget",
            Strategy::Bulkhead => "retries + bulkhead",
        }
    }

    fn policy(self) -> RetryPolicy {
        storm::policy(if self == Strategy::NoRetry {
            storm::Strategy::NoRetry
        } else {
            storm::Strategy::FullJitter
        })
    }
}

/// The throttle's `K` (the SRE book's, and the default).
pub const K: f64 = 2.0;

/// The shared throttle: `K` = 2 over the scenario's window.
///
/// # Panics
/// If the window is shorter than 20 ms.
pub fn throttle(scenario: &Scenario) -> AdaptiveThrottle {
    AdaptiveThrottle::builder()
        .k(K)
        .window(scenario.throttle_window)
        .window_requests(scenario.throttle_window_requests)
        .name("backend")
        .build()
        .expect("valid throttle")
}

/// The shared bulkhead: `capacity` × 50 ms slots (2.5 times what calls answered in a round trip
/// of ~20 ms hold at full capacity), no wait for a slot.
///
/// # Panics
/// Never: the settings are valid.
pub fn bulkhead(scenario: &Scenario) -> Bulkhead {
    Bulkhead::builder()
        .max_concurrent((scenario.capacity / 20).max(1))
        .name("backend")
        .build()
        .expect("valid bulkhead")
}

/// Per-bin counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bin {
    /// Attempts that reached the backend.
    pub arrivals: u32,
    /// Of those, served.
    pub served: u32,
    /// Of those, rejected by the backend.
    pub rejected: u32,
    /// Attempts a client guard (breaker, throttle, bulkhead) turned away.
    pub local: u32,
}

/// One logical call, as it ended.
#[derive(Debug, Clone, Copy)]
pub struct CallRecord {
    /// When it started.
    pub started: Duration,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrival { client: u32 },
    Attempt { call: u32 },
    Answer { call: u32, ok: bool },
}

/// The errors a call can end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallError {
    Overloaded,
    Rejected,
}

struct InFlight<'p, 'b> {
    engine: Engine<'p>,
    permit: Option<Permit>,
    slot: Option<BulkheadPermit<'b>>,
    started: Duration,
}

/// The backend's work bucket.
struct Backend {
    tokens: f64,
    burst: f64,
    floor: f64,
    rate: f64,
    reject_cost: f64,
    last: Duration,
}

impl Backend {
    /// Whether the attempt arriving at `now` is served.
    fn serve(&mut self, now: Duration) -> bool {
        let dt = now.saturating_sub(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.tokens = (self.tokens - self.reject_cost).max(self.floor);
            false
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `strategy` through `scenario`. Must run on a current-thread tokio runtime whose clock is
/// paused (it advances that clock); the jitter and the throttle's draws come from this thread's
/// generator, reseeded here.
///
/// ```
/// use std::time::Duration;
/// use reattempt_bench::sim::overload::{Scenario, Strategy, Summary, simulate};
///
/// let scenario = Scenario {
///     clients: 20,
///     capacity: 20,
///     overload_start: Duration::from_secs(1),
///     overload_len: Duration::from_secs(12),
///     end: Duration::from_secs(15),
///     ..Scenario::standard()
/// };
/// let runtime = tokio::runtime::Builder::new_current_thread()
///     .enable_time()
///     .start_paused(true)
///     .build()
///     .unwrap();
/// let trace = runtime.block_on(simulate(&scenario, Strategy::NoRetry));
/// let summary = Summary::of(&scenario, &trace);
/// assert!(summary.goodput < 1.0 && summary.local == 0.0);
/// ```
///
/// # Panics
/// If the clock is not paused, or time went backwards (a bug).
#[allow(clippy::too_many_lines, reason = "one event loop, read top to bottom")]
pub async fn simulate(scenario: &Scenario, strategy: Strategy) -> Trace {
    let policy = strategy.policy();
    let budget = storm::budget();
    let breaker = storm::breaker();
    let throttle = throttle(scenario);
    let bulkhead = bulkhead(scenario);
    let use_budget = matches!(strategy, Strategy::Budget | Strategy::ThrottleBudget);
    let use_breaker = strategy == Strategy::Breaker;
    let use_throttle = matches!(strategy, Strategy::Throttle | Strategy::ThrottleBudget);
    let use_bulkhead = strategy == Strategy::Bulkhead;
    reattempt::seed_rng(scenario.seed ^ 0x00C0_FFEE);

    let mut arrivals_rng = SmallRng::seed_from_u64(scenario.seed);
    let mut net_rng = SmallRng::seed_from_u64(scenario.seed ^ 0x0AE7);
    let hop: Normal<f64> = Normal::new(0.010, 0.002).expect("a valid normal");
    let mut answer_after =
        || Duration::from_secs_f64(hop.sample(&mut net_rng).abs() + hop.sample(&mut net_rng).abs());
    // The next arrival after `t`: an exponential gap at the rate of `t`'s phase, redrawn at the
    // phase's end if it crosses it (memoryless, so this is the piecewise Poisson process).
    let mut next_arrival = |mut t: Duration| loop {
        let gap = Exp::new(scenario.rate_at(t)).expect("a positive rate");
        let at = t + Duration::from_secs_f64(gap.sample(&mut arrivals_rng));
        match scenario.next_boundary(t) {
            Some(b) if at >= b => t = b,
            _ => break at,
        }
    };
    let capacity = f64::from(scenario.capacity);
    let mut backend = Backend {
        tokens: capacity / 10.0,
        burst: capacity / 10.0,
        floor: -capacity,
        rate: capacity,
        reject_cost: scenario.reject_cost,
        last: Duration::ZERO,
    };

    let horizon = scenario.end + Duration::from_secs(10);
    let n_bins = usize::try_from(horizon.as_nanos() / BIN.as_nanos()).expect("a few thousand bins");
    let bin_of = |t: Duration| usize::try_from(t.as_nanos() / BIN.as_nanos()).unwrap_or(usize::MAX);
    let mut trace = Trace {
        strategy,
        bins: vec![Bin::default(); n_bins],
        calls: Vec::new(),
    };
    let mut calls: Vec<InFlight<'_, '_>> = Vec::new();

    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, at: Duration, event: Event| {
        seq += 1;
        queue.push(Reverse((ns(at), seq, event)));
    };
    for client in 0..scenario.clients {
        push(
            &mut queue,
            next_arrival(Duration::ZERO),
            Event::Arrival { client },
        );
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
                push(&mut queue, next_arrival(now), Event::Arrival { client });
                calls.push(InFlight {
                    engine: Engine::new(&policy),
                    permit: None,
                    slot: None,
                    started: now,
                });
                u32::try_from(calls.len() - 1).expect("fewer than 2^32 calls")
            }
            Event::Attempt { call } => call,
            Event::Answer { call, ok } => {
                let c = &mut calls[call as usize];
                let result = if ok {
                    Ok(())
                } else {
                    Err(CallError::Overloaded)
                };
                let mut guards = Guards::NONE;
                if use_breaker {
                    let admission = c
                        .permit
                        .take()
                        .map_or(Admission::NotAsked, Admission::Admitted);
                    guards = guards.breaker(&breaker, admission);
                }
                if use_throttle {
                    guards = guards.throttle(&throttle, ThrottleAdmission::Admitted);
                }
                if use_budget {
                    guards = guards.budget(&budget);
                }
                match decide(
                    &mut c.engine,
                    "overload",
                    &mut FnHooks::of(&result),
                    result,
                    guards,
                ) {
                    Decision::Stop(result) => {
                        c.slot = None;
                        trace.calls.push(CallRecord {
                            started: c.started,
                            ok: result.is_ok(),
                        });
                    }
                    Decision::Retry(delay) => {
                        push(&mut queue, now + delay, Event::Attempt { call });
                    }
                }
                continue;
            }
        };
        // The call makes an attempt now, if its guards let it.
        let c = &mut calls[call as usize];
        let mut rejection = Guards::NONE;
        let mut rejected = false;
        if use_bulkhead && c.slot.is_none() {
            if let Ok(slot) = bulkhead.try_acquire() {
                c.slot = Some(slot);
            } else {
                rejection = rejection.bulkhead_full();
                rejected = true;
            }
        }
        if use_breaker && !rejected {
            if let Ok(permit) = breaker.try_acquire() {
                c.permit = Some(permit);
            } else {
                rejection = rejection.breaker(&breaker, Admission::Rejected);
                rejected = true;
            }
        }
        if use_throttle && !rejected {
            let admission = admit(&c.engine, None, Some(&throttle), false, false).throttle();
            if admission.rejected() {
                rejection = rejection.throttle(&throttle, admission);
                rejected = true;
            }
        }
        if rejected {
            // Turned away: no attempt leaves, and the call ends (as the drivers end it).
            trace.bins[bin].local += 1;
            if use_budget {
                rejection = rejection.budget(&budget);
            }
            let outcome: Result<(), _> = Err(CallError::Rejected);
            let outcome = decide(
                &mut c.engine,
                "overload",
                &mut FnHooks::of(&outcome).retry_if(|_| false),
                outcome,
                rejection,
            );
            assert!(matches!(outcome, Decision::Stop(Err(_))));
            c.slot = None;
            trace.calls.push(CallRecord {
                started: c.started,
                ok: false,
            });
            continue;
        }
        begin(&mut c.engine, false);
        let b = &mut trace.bins[bin];
        b.arrivals += 1;
        let ok = backend.serve(now);
        if ok {
            b.served += 1;
        } else {
            b.rejected += 1;
        }
        push(&mut queue, now + answer_after(), Event::Answer { call, ok });
    }
    trace
}

/// The part of the overload left out of the steady-state figures.
pub const STEADY: Duration = Duration::from_secs(10);

/// The table's numbers for one trace.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Attempts served per second during the overload ÷ capacity.
    pub goodput: f64,
    /// Attempts reaching the backend per second during the overload.
    pub arrivals: f64,
    /// Attempts reaching the backend ÷ attempts it served, during the overload.
    pub arrivals_per_accept: f64,
    /// As `goodput`, leaving out the overload's first 10 s (the guards' transient).
    pub goodput_steady: f64,
    /// As `arrivals_per_accept`, leaving out the overload's first 10 s.
    pub arrivals_per_accept_steady: f64,
    /// Attempts turned away by a client guard per second during the overload.
    pub local: f64,
    /// Share of the calls started during the overload that succeeded.
    pub ok_during: f64,
    /// From the overload's end to the end of the last second (by call start) in which more than
    /// 1 % of the calls started failed; `None` if that second is the run's last (not recovered).
    pub recovery: Option<Duration>,
    /// Share of the calls started in the 10 s after the overload that succeeded.
    pub ok_after: f64,
}

impl Summary {
    /// Computes the summary of `trace`.
    pub fn of(scenario: &Scenario, trace: &Trace) -> Summary {
        let idx = |t: Duration| usize::try_from(t.as_nanos() / BIN.as_nanos()).unwrap_or(0);
        let (from, to) = (scenario.overload_start, scenario.overload_end());
        let bins = &trace.bins[idx(from)..idx(to)];
        let secs = to.saturating_sub(from).as_secs_f64();
        let sum = |f: fn(&Bin) -> u32| f64::from(bins.iter().map(f).sum::<u32>());
        let served = sum(|b| b.served);
        let arrivals = sum(|b| b.arrivals);
        let steady = &trace.bins[idx(from + STEADY)..idx(to)];
        let steady_sum = |f: fn(&Bin) -> u32| f64::from(steady.iter().map(f).sum::<u32>());
        let steady_secs = to.saturating_sub(from + STEADY).as_secs_f64();
        let ok_share = |from: Duration, to: Duration| {
            let (mut n, mut ok) = (0u32, 0u32);
            for c in trace
                .calls
                .iter()
                .filter(|c| c.started >= from && c.started < to)
            {
                n += 1;
                ok += u32::from(c.ok);
            }
            (f64::from(ok), f64::from(n))
        };
        let second = Duration::from_secs(1);
        let mut last_bad = None;
        let mut t = to;
        while t + second <= scenario.end {
            let (ok, n) = ok_share(t, t + second);
            if n > 0.0 && (n - ok) / n > 0.01 {
                last_bad = Some(t + second);
            }
            t += second;
        }
        let recovery = match last_bad {
            None => Some(Duration::ZERO),
            Some(end) if end + second > scenario.end => None,
            Some(end) => Some(end.saturating_sub(to)),
        };
        let share = |(ok, n): (f64, f64)| ok / n;
        Summary {
            goodput: served / secs / f64::from(scenario.capacity),
            arrivals: arrivals / secs,
            arrivals_per_accept: arrivals / served,
            goodput_steady: steady_sum(|b| b.served) / steady_secs / f64::from(scenario.capacity),
            arrivals_per_accept_steady: steady_sum(|b| b.arrivals) / steady_sum(|b| b.served),
            local: sum(|b| b.local) / secs,
            ok_during: share(ok_share(from, to)),
            recovery,
            ok_after: share(ok_share(to, to + Duration::from_secs(10))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issue's scenario at a tenth of the scale and a third of the length.
    fn small(throttle_window_requests: u32) -> Scenario {
        Scenario {
            clients: 200,
            capacity: 200,
            overload_start: Duration::from_secs(5),
            overload_len: Duration::from_secs(20),
            end: Duration::from_secs(45),
            throttle_window_requests,
            ..Scenario::standard()
        }
    }

    fn run(scenario: &Scenario) -> Summary {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let trace = runtime.block_on(simulate(scenario, Strategy::Throttle));
        Summary::of(scenario, &trace)
    }

    /// Issue 17's goals over the whole overload, its onset included: goodput ≥ 90 % of
    /// capacity, arrivals ≤ K × served + 5 %, a short recovery. The default window (120 s or
    /// 512 requests) meets them; the 120 s window alone did not (the onset and the release).
    #[test]
    fn the_default_throttle_meets_the_goals_over_the_whole_overload() {
        let default = run(&small(AdaptiveThrottle::DEFAULT_WINDOW_REQUESTS));
        assert!(default.goodput >= 0.90, "{default:?}");
        assert!(default.arrivals_per_accept <= K * 1.05, "{default:?}");
        assert!(
            default
                .recovery
                .is_some_and(|r| r <= Duration::from_secs(3)),
            "{default:?}"
        );

        let time_only = run(&small(u32::MAX));
        assert!(time_only.goodput < 0.90, "{time_only:?}");
        assert!(time_only.arrivals_per_accept > K * 1.05, "{time_only:?}");
        assert!(
            time_only
                .recovery
                .is_none_or(|r| r > Duration::from_secs(10)),
            "{time_only:?}"
        );
    }
}
