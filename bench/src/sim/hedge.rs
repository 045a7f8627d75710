//! Hedging, simulated: an open stream of calls to a replicated service, each replica one server
//! with a FIFO queue, service times lognormal with a few stragglers (a GC pause, a cold cache).
//! Each strategy's decisions are the runtime's own: a real [`Engine`] per call, whose first
//! attempt is [`begin`], whose hedge is [`start_alongside`] (paid from a real [`RetryBudget`] when
//! the strategy has one), whose answers go through [`decide_copy`]; the hedge delay is the policy's
//! [`HedgeAfter`] over the policy's own `Latencies`, fed as the closure
//! driver feeds it (each copy's latency; a dropped copy's time so far). None of those steps reads a
//! clock here (no timeout, no `max_elapsed`), so simulated time is a plain number and the loop runs
//! without tokio.
//!
//! A call sends its first copy to a random replica; a hedge goes to another one. The first answer
//! ends the call; the other copy is cancelled: dropped from its queue if it is still waiting there
//! (the cancellation reaches the replica), served to the end (wasted work) if it has started. The
//! network adds a fixed 0.5 ms each way.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use rand::{RngExt, SeedableRng, rngs::SmallRng};
use rand_distr::{Distribution, Exp, LogNormal};
use reattempt::{FnHooks, HedgeAfter, RetryBudget, RetryPolicy};
use retry_runtime::__private::{CopyDecision, Engine, Guards, begin, decide_copy, start_alongside};

/// The service every strategy faces.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Replicas, each serving one request at a time.
    pub replicas: u32,
    /// The median service time.
    pub median: Duration,
    /// The lognormal's sigma (of the log of the service time).
    pub sigma: f64,
    /// The share of requests that straggle.
    pub straggler_rate: f64,
    /// A straggler's service time is this many times its draw.
    pub straggler_factor: f64,
    /// The offered load without hedging: mean service time × arrival rate ÷ replicas.
    pub utilisation: f64,
    /// Calls simulated (the first tenth are a warm-up, not counted).
    pub calls: u32,
    /// The seed of everything random (the same draws for every strategy).
    pub seed: u64,
}

impl Scenario {
    /// The mean service time of one request, stragglers included.
    pub fn mean_service(&self) -> f64 {
        let lognormal_mean = self.median.as_secs_f64() * (self.sigma * self.sigma / 2.0).exp();
        lognormal_mean * (1.0 + self.straggler_rate * (self.straggler_factor - 1.0))
    }

    /// Calls per second that make `utilisation` without hedging.
    pub fn arrival_rate(&self) -> f64 {
        self.utilisation * f64::from(self.replicas) / self.mean_service()
    }
}

/// How the calls hedge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Strategy {
    /// One request per call.
    Unhedged,
    /// A hedge after a fixed delay.
    Fixed(Duration),
    /// A hedge after the 95th percentile of recent latencies (`hedge_after = "p95"`).
    P95,
    /// As `Fixed`, each hedge paid from a shared [`RetryBudget`] ([`budget`]).
    FixedBudget(Duration),
    /// As `P95`, each hedge paid from a shared [`RetryBudget`] ([`budget`]).
    P95Budget,
}

impl Strategy {
    /// A short label for tables and the CSV.
    pub fn label(self) -> String {
        match self {
            Strategy::Unhedged => "unhedged".to_owned(),
            Strategy::Fixed(d) => format!("hedge after {}ms", d.as_millis()),
            Strategy::FixedBudget(d) => format!("hedge after {}ms + budget", d.as_millis()),
            Strategy::P95 => "hedge after p95".to_owned(),
            Strategy::P95Budget => "hedge after p95 + budget".to_owned(),
        }
    }

    /// The policy of this strategy: two attempts (the first and one hedge) when it hedges.
    ///
    /// # Panics
    /// Never: the settings are valid.
    pub fn policy(self) -> RetryPolicy {
        let b = RetryPolicy::builder();
        match self {
            Strategy::Unhedged => b.max_attempts(1),
            Strategy::Fixed(d) | Strategy::FixedBudget(d) => {
                b.max_attempts(2).hedge_after(HedgeAfter::Fixed(d))
            }
            Strategy::P95 | Strategy::P95Budget => {
                b.max_attempts(2).hedge_after(HedgeAfter::quantile(95.0))
            }
        }
        .build()
        .expect("a valid policy")
    }
}

/// The shared budget of [`Strategy::P95Budget`]: a hedge costs 20 tokens and a call that did not
/// hedge deposits 1, so hedges are held to about 1 call in 21 on average (500 tokens: a burst of 25 hedges).
///
/// # Panics
/// Never: the settings are valid.
pub fn budget() -> RetryBudget {
    RetryBudget::builder()
        .max_tokens(500)
        .retry_cost(20)
        .success_deposit(1)
        .build()
        .expect("a valid budget")
}

/// One strategy's run at one load.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The strategy.
    pub strategy: Strategy,
    /// Each counted call's latency, sorted.
    pub latencies: Vec<Duration>,
    /// Requests sent to the replicas (copies included) per counted call.
    pub requests_per_call: f64,
    /// The replicas' busy time ÷ their capacity over the run (hedges' wasted work included).
    pub busy: f64,
}

impl Outcome {
    /// The `q` quantile (in [0, 1]) of the calls' latencies.
    pub fn quantile(&self, q: f64) -> Duration {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an index into fewer than 2^32 latencies"
        )]
        let i = ((self.latencies.len() as f64 * q).ceil() as usize).max(1) - 1;
        self.latencies[i.min(self.latencies.len() - 1)]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A call starts.
    Arrival,
    /// A request reaches its replica.
    Reach { call: u32, copy: u8 },
    /// A replica finishes the request it serves.
    Served { replica: u32 },
    /// The answer of a request reaches its call.
    Answer { call: u32, copy: u8 },
    /// The call's hedge delay ran out.
    Hedge { call: u32 },
}

struct Call<'p> {
    engine: Engine<'p>,
    started: f64,
    /// When each copy was sent, and to which replica.
    copies: [Option<(f64, u32)>; 2],
    done: bool,
}

#[derive(Default)]
struct Replica {
    queue: VecDeque<(u32, u8)>,
    serving: Option<(u32, u8)>,
}

const NET: f64 = 0.000_5;

/// Starts serving the next live request of `replica` if it is idle; gives its service time.
/// A request whose call has ended meanwhile is dropped from the queue (cancelled).
fn start_next(
    replica: &mut Replica,
    calls: &[Call<'_>],
    mut took: impl FnMut() -> f64,
) -> Option<f64> {
    if replica.serving.is_some() {
        return None;
    }
    while let Some((call, copy)) = replica.queue.pop_front() {
        if !calls[call as usize].done {
            replica.serving = Some((call, copy));
            return Some(took());
        }
    }
    None
}

fn secs(d: f64) -> Duration {
    Duration::from_secs_f64(d.max(0.0))
}

fn key(t: f64) -> u64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "simulated nanoseconds, far below 2^64"
    )]
    let ns = (t * 1e9) as u64;
    ns
}

/// Runs `strategy` through `scenario`.
///
/// ```
/// use std::time::Duration;
/// use reattempt_bench::sim::hedge::{Scenario, Strategy, simulate};
///
/// let s = Scenario {
///     replicas: 10,
///     median: Duration::from_millis(10),
///     sigma: 0.4,
///     straggler_rate: 0.015,
///     straggler_factor: 10.0,
///     utilisation: 0.3,
///     calls: 5_000,
///     seed: 1,
/// };
/// let unhedged = simulate(&s, Strategy::Unhedged);
/// let hedged = simulate(&s, Strategy::Fixed(Duration::from_millis(50)));
/// assert_eq!(unhedged.requests_per_call, 1.0);
/// assert!(hedged.requests_per_call > 1.0 && hedged.requests_per_call < 1.2);
/// assert!(hedged.quantile(0.99) < unhedged.quantile(0.99));
/// ```
///
/// # Panics
/// Never for a valid scenario (at least one replica, a positive median and load).
#[allow(clippy::too_many_lines, reason = "one event loop, read top to bottom")]
pub fn simulate(scenario: &Scenario, strategy: Strategy) -> Outcome {
    let policy = strategy.policy();
    let shared_budget = budget();
    let budget = matches!(strategy, Strategy::FixedBudget(_) | Strategy::P95Budget)
        .then_some(&shared_budget);
    let mut arrivals = SmallRng::seed_from_u64(scenario.seed);
    let mut service = SmallRng::seed_from_u64(scenario.seed ^ 0x5E41_1CE5);
    let mut routing = SmallRng::seed_from_u64(scenario.seed ^ 0x0000_0D15_7A7C);
    let gap = Exp::new(scenario.arrival_rate()).expect("a positive rate");
    let draw = LogNormal::new(scenario.median.as_secs_f64().ln(), scenario.sigma)
        .expect("a valid lognormal");
    let service_time = |rng: &mut SmallRng| {
        let s = draw.sample(rng);
        if rng.random::<f64>() < scenario.straggler_rate {
            s * scenario.straggler_factor
        } else {
            s
        }
    };

    let mut replicas: Vec<Replica> = (0..scenario.replicas).map(|_| Replica::default()).collect();
    let mut calls: Vec<Call<'_>> = Vec::with_capacity(scenario.calls as usize);
    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, at: f64, event: Event| {
        seq += 1;
        queue.push(Reverse((key(at), seq, event)));
    };
    let warm_up = scenario.calls / 10;
    let mut latencies = Vec::with_capacity(scenario.calls as usize);
    let mut requests = 0u64;
    let mut busy = 0.0;
    let mut t_arrival = gap.sample(&mut arrivals);
    push(&mut queue, t_arrival, Event::Arrival);
    let mut end = 0.0;

    while let Some(Reverse((at, _, event))) = queue.pop() {
        #[allow(clippy::cast_precision_loss, reason = "simulated nanoseconds")]
        let now = at as f64 / 1e9;
        end = now;
        match event {
            Event::Arrival => {
                if calls.len() < scenario.calls as usize {
                    t_arrival += gap.sample(&mut arrivals);
                    push(&mut queue, t_arrival, Event::Arrival);
                } else {
                    continue;
                }
                let mut engine = Engine::new(&policy);
                begin(&mut engine, false);
                let replica = routing.random_range(0..scenario.replicas);
                let id = u32::try_from(calls.len()).expect("fewer than 2^32 calls");
                calls.push(Call {
                    engine,
                    started: now,
                    copies: [Some((now, replica)), None],
                    done: false,
                });
                requests += u64::from(id >= warm_up);
                push(&mut queue, now + NET, Event::Reach { call: id, copy: 0 });
                if let Some(h) = policy.hedge_after() {
                    let delay = h.delay(policy.latencies()).as_secs_f64();
                    push(&mut queue, now + delay, Event::Hedge { call: id });
                }
            }
            Event::Hedge { call } => {
                let c = &mut calls[call as usize];
                if c.done {
                    continue;
                }
                if start_alongside(&mut c.engine, None, None, budget, false, true).is_none() {
                    continue;
                }
                let first = c.copies[0].map_or(0, |(_, r)| r);
                let mut replica = routing.random_range(0..scenario.replicas - 1);
                if replica >= first {
                    replica += 1;
                }
                c.copies[1] = Some((now, replica));
                requests += u64::from(call >= warm_up);
                push(&mut queue, now + NET, Event::Reach { call, copy: 1 });
            }
            Event::Reach { call, copy } => {
                if calls[call as usize].done {
                    // Cancelled on the way: the replica never sees it.
                    continue;
                }
                let Some((_, replica)) = calls[call as usize].copies[copy as usize] else {
                    unreachable!("a copy sent")
                };
                replicas[replica as usize].queue.push_back((call, copy));
                if let Some(took) = start_next(&mut replicas[replica as usize], &calls, || {
                    service_time(&mut service)
                }) {
                    busy += took;
                    push(&mut queue, now + took, Event::Served { replica });
                }
            }
            Event::Served { replica } => {
                let Some((call, copy)) = replicas[replica as usize].serving.take() else {
                    unreachable!("a replica serving")
                };
                push(&mut queue, now + NET, Event::Answer { call, copy });
                if let Some(took) = start_next(&mut replicas[replica as usize], &calls, || {
                    service_time(&mut service)
                }) {
                    busy += took;
                    push(&mut queue, now + took, Event::Served { replica });
                }
            }
            Event::Answer { call, copy } => {
                let c = &mut calls[call as usize];
                if c.done {
                    continue;
                }
                let Some((sent, _)) = c.copies[copy as usize] else {
                    unreachable!("a copy sent")
                };
                policy.latencies().record(secs(now - sent));
                let other = c.copies[1 - copy as usize];
                let outcome: Result<(), ()> = Ok(());
                let mut guards = Guards::NONE;
                if let Some(b) = budget {
                    guards = guards.budget(b);
                }
                match decide_copy(
                    &mut c.engine,
                    "hedge_sim",
                    &mut FnHooks::of(&outcome),
                    outcome,
                    guards,
                    other.is_some(),
                ) {
                    CopyDecision::Stop(_) => {
                        c.done = true;
                        if let Some((other_sent, _)) = other {
                            // The loser is dropped: its time so far, as the driver records it.
                            policy.latencies().record(secs(now - other_sent));
                        }
                        if call >= warm_up {
                            latencies.push(secs(now - c.started));
                        }
                    }
                    CopyDecision::Retry(_) | CopyDecision::Wait => {
                        unreachable!("every answer is an accepted Ok")
                    }
                }
            }
        }
    }
    latencies.sort_unstable();
    #[allow(clippy::cast_precision_loss, reason = "fewer than 2^52 requests")]
    let requests_per_call = requests as f64 / latencies.len() as f64;
    Outcome {
        strategy,
        latencies,
        requests_per_call,
        busy: busy / (end * f64::from(scenario.replicas)),
    }
}
