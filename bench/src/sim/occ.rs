//! Marc Brooker's optimistic-concurrency contention model ("Exponential Backoff And Jitter", AWS
//! Architecture Blog, 2015; the published simulator is `aws-samples/aws-arch-backoff-simulator`),
//! as a deterministic discrete-event simulation whose sleeps come from [`RetryPolicy::delays_seeded`].
//!
//! One row with a version number. Each client reads the version, then writes with it; the write
//! succeeds only if the version is unchanged, and bumps it. A client whose write failed sleeps its
//! next backoff and starts again with a read. Every network hop takes |N(10 ms, 2 ms)|: four hops
//! per attempt (read request, read reply, write request, write reply), and the sleep is added to
//! the next read request's hop, as in the published code. All clients start at t = 0; each writes
//! once. A run ends when the queue is empty; it reports the writes made ("calls", counted at the
//! server, failed ones included) and the time of the last event (the last successful write's reply
//! reaching its client).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::{SeedableRng, rngs::SmallRng};
use rand_distr::{Distribution, Normal};
use reattempt::{Backoff, Delays, Jitter, RetryPolicy};

/// The mean and standard deviation of one network hop, in milliseconds.
pub const HOP_MEAN_MS: f64 = 10.0;
/// See [`HOP_MEAN_MS`].
pub const HOP_SD_MS: f64 = 2.0;

/// The policy for one jitter kind, equivalent to the published simulator's `base = 5 ms`,
/// `cap = 2 s`.
///
/// Its exponential kinds sleep `min(cap, base × 2ⁿ)` before retry `n` (n from 1): 10, 20, 40 … ms,
/// which is our `delay = 10ms`, multiplier 2, `max_delay = 2s` (`delay × 2ⁿ⁻¹`). Its decorrelated
/// kind sleeps `min(cap, U[base, previous × 3])` with the first previous = `base`, which is our
/// `Jitter::Decorrelated` with `delay = 5ms` (decorrelated jitter ignores the backoff). No limit
/// on attempts: every client writes once in the end.
///
/// # Panics
/// Never: the settings are valid.
pub fn policy(jitter: Jitter) -> RetryPolicy {
    let delay = match jitter {
        Jitter::Decorrelated => Duration::from_millis(5),
        _ => Duration::from_millis(10),
    };
    RetryPolicy::builder()
        .max_attempts(RetryPolicy::MAX_ATTEMPTS)
        .backoff(Backoff::Exponential)
        .delay(delay)
        .multiplier(2.0)
        .max_delay(Duration::from_secs(2))
        .jitter(jitter)
        .build()
        .expect("a valid policy")
}

/// What a run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    /// Writes that reached the row, failed ones included.
    pub calls: u64,
    /// When the last event happened (the last successful write's reply arrived).
    pub last_event: Duration,
}

/// A message arriving at the server or a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// A read request reaches the server.
    Read,
    /// The read's reply, with the version read, reaches the client.
    ReadReply(u64),
    /// A write request, conditional on the version, reaches the server.
    Write(u64),
    /// The write's reply reaches the client.
    WriteReply(bool),
}

/// `SplitMix64`: independent-looking seeds from structured ones.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One run with `clients` clients under `policy`; the same seed gives the same run.
///
/// # Panics
/// If the event queue's time went backwards (a bug).
pub fn run(clients: u32, policy: &RetryPolicy, seed: u64) -> Run {
    let mut net = SmallRng::seed_from_u64(mix(seed));
    let normal = Normal::new(HOP_MEAN_MS, HOP_SD_MS).expect("a valid normal distribution");
    let mut hop = || {
        let ms: f64 = normal.sample(&mut net).abs();
        // At most a few hundred ms: no truncation or sign to lose.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ns = (ms * 1e6).round() as u64;
        ns
    };
    // One schedule per client, each with its own generator, as in the published code (one
    // backoff object per client).
    let mut sleeps: Vec<Delays<'_>> = (0..clients)
        .map(|c| policy.delays_seeded(mix(seed ^ (u64::from(c) << 32) ^ 0x5EED)))
        .collect();
    // (time in ns, sequence number for ties: first scheduled, first served, client, step)
    let mut queue: BinaryHeap<Reverse<(u64, u64, u32, Step)>> =
        BinaryHeap::with_capacity(clients as usize);
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, at: u64, client: u32, step: Step| {
        seq += 1;
        queue.push(Reverse((at, seq, client, step)));
    };
    for c in 0..clients {
        let at = hop();
        push(&mut queue, at, c, Step::Read);
    }
    let mut version = 0u64;
    let mut calls = 0u64;
    let mut now = 0u64;
    while let Some(Reverse((at, _, client, step))) = queue.pop() {
        assert!(at >= now, "time must move forward");
        now = at;
        match step {
            Step::Read => push(&mut queue, now + hop(), client, Step::ReadReply(version)),
            Step::ReadReply(read) => push(&mut queue, now + hop(), client, Step::Write(read)),
            Step::Write(read) => {
                calls += 1;
                let ok = read == version;
                if ok {
                    version += 1;
                }
                push(&mut queue, now + hop(), client, Step::WriteReply(ok));
            }
            Step::WriteReply(true) => {}
            Step::WriteReply(false) => {
                let sleep = sleeps[client as usize]
                    .next()
                    .expect("u32::MAX attempts do not run out");
                let sleep = u64::try_from(sleep.as_nanos()).unwrap_or(u64::MAX);
                push(&mut queue, now + hop() + sleep, client, Step::Read);
            }
        }
    }
    Run {
        calls,
        last_event: Duration::from_nanos(now),
    }
}

/// The mean and standard deviation of a sample.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    #[allow(clippy::cast_precision_loss, reason = "at most a few hundred values")]
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// The averages over `runs` runs of one cell (a number of clients and a jitter kind).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Clients in each run.
    pub clients: u32,
    /// The jitter kind.
    pub jitter: Jitter,
    /// Runs averaged.
    pub runs: u32,
    /// Mean writes per run.
    pub calls: f64,
    /// Their standard deviation across runs.
    pub calls_sd: f64,
    /// Mean time of the last event, in ms.
    pub time_ms: f64,
    /// Its standard deviation across runs, in ms.
    pub time_ms_sd: f64,
}

/// The average of `runs` runs; run `r` of a cell is seeded from the cell and `r`.
pub fn cell(clients: u32, jitter: Jitter, runs: u32, seed: u64) -> Cell {
    let policy = policy(jitter);
    let kind = match jitter {
        Jitter::None => 1,
        Jitter::Full => 2,
        Jitter::Equal => 3,
        Jitter::Decorrelated => 4,
        Jitter::Proportional(_) => 5,
    };
    let (calls, times): (Vec<f64>, Vec<f64>) = (0..runs)
        .map(|r| {
            let s = mix(seed ^ mix(kind << 48 | u64::from(clients) << 24 | u64::from(r)));
            let out = run(clients, &policy, s);
            #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
            let calls = out.calls as f64;
            (calls, out.last_event.as_secs_f64() * 1e3)
        })
        .unzip();
    let (calls, calls_sd) = mean_sd(&calls);
    let (time_ms, time_ms_sd) = mean_sd(&times);
    Cell {
        clients,
        jitter,
        runs,
        calls,
        calls_sd,
        time_ms,
        time_ms_sd,
    }
}
