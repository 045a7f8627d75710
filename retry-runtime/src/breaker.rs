//! The circuit breaker: stop calling a dependency that is down, and probe it before trusting it
//! again. closed → open when failures pile up → half-open after `reset_timeout`, letting a few
//! probes through → closed if they all succeed, open again if one fails.
//!
//! The state sits behind a mutex held only for a few comparisons, never across an await. Permits
//! are plain data (no borrow of the breaker), so the breaker can be named afresh at each use; a
//! permit carries the breaker's epoch, so outcomes from before a transition are ignored, and a
//! probe that never reports back (its call was cancelled) only holds its slot until the round
//! goes stale after `reset_timeout`, when a new round of probes starts.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::BreakerOpen;

/// Where a [`CircuitBreaker`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls pass; failures are counted.
    Closed,
    /// Calls are rejected with [`BreakerOpen`] until `reset_timeout` has passed.
    Open,
    /// A few probe calls pass; their outcome closes or reopens the breaker.
    HalfOpen,
}

impl std::fmt::Display for BreakerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        })
    }
}

/// Leave to make one call through a breaker; hand it back with [`CircuitBreaker::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "record the call's outcome with CircuitBreaker::record"]
pub struct Permit {
    epoch: u64,
    probe: bool,
}

/// When the breaker trips.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Trip {
    /// After this many failures in a row.
    Consecutive(u32),
    /// When, over the last `window` calls (and at least `minimum_calls`), the share of failures
    /// reaches `rate`.
    Rate {
        rate: f64,
        window: u32,
        minimum_calls: u32,
    },
}

#[derive(Debug)]
enum Phase {
    Closed,
    Open {
        until: Instant,
    },
    HalfOpen {
        admitted: u32,
        succeeded: u32,
        round_started: Instant,
    },
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    /// Bumped at every transition; permits from an older epoch are ignored.
    epoch: u64,
    consecutive_failures: u32,
    /// The last outcomes while closed (failure = true), for the rate mode: a ring of `window`.
    outcomes: Vec<bool>,
    next: usize,
    filled: u32,
    failures_in_window: u32,
}

/// A circuit breaker shared by every call that names it (a `static`, a `LazyLock`, a field).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use retry_runtime::{BreakerState, CircuitBreaker};
///
/// let breaker = CircuitBreaker::builder()
///     .failure_threshold(2)
///     .reset_timeout(Duration::from_secs(30))
///     .build()
///     .unwrap();
/// for _ in 0..2 {
///     let permit = breaker.try_acquire().unwrap();
///     breaker.record(permit, false); // a failure
/// }
/// assert_eq!(breaker.state(), BreakerState::Open);
/// assert!(breaker.try_acquire().is_err());
/// tokio::time::sleep(Duration::from_secs(30)).await;
/// let probe = breaker.try_acquire().unwrap();
/// assert_eq!(breaker.state(), BreakerState::HalfOpen);
/// breaker.record(probe, true);
/// assert_eq!(breaker.state(), BreakerState::Closed);
/// # }
/// ```
#[derive(Debug)]
pub struct CircuitBreaker {
    name: &'static str,
    trip: Trip,
    reset_timeout: Duration,
    half_open_probes: u32,
    inner: Mutex<Inner>,
}

impl CircuitBreaker {
    /// A builder with the defaults: open after 5 failures in a row, probe after 30 s, one probe.
    pub fn builder() -> CircuitBreakerBuilder {
        CircuitBreakerBuilder::default()
    }

    /// The breaker's state now (an open breaker whose `reset_timeout` has passed reads half-open).
    pub fn state(&self) -> BreakerState {
        let mut inner = self.lock();
        self.advance(&mut inner);
        match inner.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// The name given to the builder (in events).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Leave to make one call, or [`BreakerOpen`] while the breaker is open (or all of this
    /// round's probes are out).
    ///
    /// # Errors
    /// [`BreakerOpen`] when the call must not be made.
    pub fn try_acquire(&self) -> Result<Permit, BreakerOpen> {
        let mut inner = self.lock();
        self.advance(&mut inner);
        let epoch = inner.epoch;
        match &mut inner.phase {
            Phase::Closed => Ok(Permit {
                epoch,
                probe: false,
            }),
            Phase::HalfOpen { admitted, .. } if *admitted < self.half_open_probes => {
                *admitted += 1;
                Ok(Permit { epoch, probe: true })
            }
            Phase::Open { .. } | Phase::HalfOpen { .. } => Err(BreakerOpen::new()),
        }
    }

    /// Records how the call made under `permit` went (`true`: it succeeded).
    pub fn record(&self, permit: Permit, succeeded: bool) {
        let mut inner = self.lock();
        if permit.epoch != inner.epoch {
            return; // the breaker moved on since this call was admitted
        }
        // The clock is read only to open the breaker, so a closed breaker's success reads none.
        let reopen = || Phase::Open {
            until: Instant::now() + self.reset_timeout,
        };
        match &mut inner.phase {
            Phase::Closed => {
                if self.count(&mut inner, succeeded) {
                    self.transition(&mut inner, reopen());
                }
            }
            Phase::HalfOpen { succeeded: ok, .. } if permit.probe => {
                if succeeded {
                    *ok += 1;
                    if *ok >= self.half_open_probes {
                        self.transition(&mut inner, Phase::Closed);
                    }
                } else {
                    self.transition(&mut inner, reopen());
                }
            }
            Phase::HalfOpen { .. } | Phase::Open { .. } => {}
        }
    }

    /// Counts an outcome while closed; `true` when the breaker must open.
    fn count(&self, inner: &mut Inner, succeeded: bool) -> bool {
        match self.trip {
            Trip::Consecutive(threshold) => {
                inner.consecutive_failures = if succeeded {
                    0
                } else {
                    inner.consecutive_failures + 1
                };
                inner.consecutive_failures >= threshold
            }
            Trip::Rate {
                rate,
                window,
                minimum_calls,
            } => {
                let failed = !succeeded;
                if inner.filled == window {
                    if inner.outcomes[inner.next] {
                        inner.failures_in_window -= 1;
                    }
                } else {
                    inner.filled += 1;
                }
                inner.outcomes[inner.next] = failed;
                inner.failures_in_window += u32::from(failed);
                inner.next = (inner.next + 1) % inner.outcomes.len();
                inner.filled >= minimum_calls
                    && f64::from(inner.failures_in_window) >= rate * f64::from(inner.filled)
            }
        }
    }

    /// Open → half-open once `reset_timeout` has passed; a stale half-open round (probes that
    /// never reported back for `reset_timeout`) starts again.
    fn advance(&self, inner: &mut Inner) {
        if matches!(inner.phase, Phase::Closed) {
            return; // the common case: no clock read
        }
        let now = Instant::now();
        match inner.phase {
            Phase::Open { until } if now >= until => self.transition(
                inner,
                Phase::HalfOpen {
                    admitted: 0,
                    succeeded: 0,
                    round_started: now,
                },
            ),
            Phase::HalfOpen { round_started, .. } if now >= round_started + self.reset_timeout => {
                inner.epoch += 1;
                inner.phase = Phase::HalfOpen {
                    admitted: 0,
                    succeeded: 0,
                    round_started: now,
                };
            }
            _ => {}
        }
    }

    fn transition(&self, inner: &mut Inner, to: Phase) {
        let from = phase_name(&inner.phase);
        inner.epoch += 1;
        inner.consecutive_failures = 0;
        inner.filled = 0;
        inner.next = 0;
        inner.failures_in_window = 0;
        inner.phase = to;
        crate::events::breaker_transition(self.name, from, phase_name(&inner.phase));
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent even if a holder panicked: every update is a few
        // assignments with no call out in between.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn phase_name(phase: &Phase) -> BreakerState {
    match phase {
        Phase::Closed => BreakerState::Closed,
        Phase::Open { .. } => BreakerState::Open,
        Phase::HalfOpen { .. } => BreakerState::HalfOpen,
    }
}

/// Builds a [`CircuitBreaker`].
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::CircuitBreaker;
///
/// // Resilience4j-style: open when half of the last 20 calls (at least 10) failed.
/// let breaker = CircuitBreaker::builder()
///     .failure_rate(0.5)
///     .sliding_window(20)
///     .minimum_calls(10)
///     .reset_timeout(Duration::from_secs(10))
///     .half_open_probes(3)
///     .name("payments")
///     .build()
///     .unwrap();
/// assert_eq!(breaker.name(), "payments");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct CircuitBreakerBuilder {
    name: &'static str,
    failure_threshold: Option<u32>,
    failure_rate: Option<f64>,
    sliding_window: Option<u32>,
    minimum_calls: Option<u32>,
    reset_timeout: Duration,
    half_open_probes: u32,
}

impl Default for CircuitBreakerBuilder {
    fn default() -> Self {
        CircuitBreakerBuilder {
            name: "circuit_breaker",
            failure_threshold: None,
            failure_rate: None,
            sliding_window: None,
            minimum_calls: None,
            reset_timeout: Duration::from_secs(30),
            half_open_probes: 1,
        }
    }
}

impl CircuitBreakerBuilder {
    /// Opens after this many failures in a row (≥ 1; default 5). Not with `failure_rate`.
    pub fn failure_threshold(mut self, n: u32) -> Self {
        self.failure_threshold = Some(n);
        self
    }

    /// Opens when the share of failures over the sliding window reaches `rate` (in (0, 1]).
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = Some(rate);
        self
    }

    /// The number of recent calls the failure rate is measured over (≥ 1; default 100).
    pub fn sliding_window(mut self, calls: u32) -> Self {
        self.sliding_window = Some(calls);
        self
    }

    /// The fewest calls in the window before the rate is judged (≥ 1, ≤ window; default the window).
    pub fn minimum_calls(mut self, calls: u32) -> Self {
        self.minimum_calls = Some(calls);
        self
    }

    /// How long the breaker stays open before probing (> 0; default 30 s).
    pub fn reset_timeout(mut self, d: Duration) -> Self {
        self.reset_timeout = d;
        self
    }

    /// How many probes a half-open breaker lets through, all of which must succeed to close (≥ 1; default 1).
    pub fn half_open_probes(mut self, n: u32) -> Self {
        self.half_open_probes = n;
        self
    }

    /// A label for events.
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Checks the settings and makes the breaker.
    ///
    /// # Errors
    /// A [`ConfigError`](crate::ConfigError) naming the field at fault.
    pub fn build(self) -> Result<CircuitBreaker, crate::ConfigError> {
        use crate::ConfigError as E;
        let trip = match (self.failure_threshold, self.failure_rate) {
            (Some(_), Some(_)) => {
                return Err(E::Conflict {
                    field: "failure_rate",
                    other: "failure_threshold",
                });
            }
            (threshold, None) => {
                if self.sliding_window.is_some() || self.minimum_calls.is_some() {
                    return Err(E::Requires {
                        field: if self.sliding_window.is_some() {
                            "sliding_window"
                        } else {
                            "minimum_calls"
                        },
                        other: "failure_rate",
                    });
                }
                match threshold.unwrap_or(5) {
                    0 => {
                        return Err(E::Zero {
                            field: "failure_threshold",
                        });
                    }
                    n => Trip::Consecutive(n),
                }
            }
            (None, Some(rate)) => {
                if !(rate.is_finite() && rate > 0.0 && rate <= 1.0) {
                    return Err(E::OutOfRange {
                        field: "failure_rate",
                        rule: "a share of failures in (0, 1]",
                    });
                }
                let window = self.sliding_window.unwrap_or(100);
                if window == 0 {
                    return Err(E::Zero {
                        field: "sliding_window",
                    });
                }
                let minimum_calls = self.minimum_calls.unwrap_or(window);
                if minimum_calls == 0 || minimum_calls > window {
                    return Err(E::OutOfRange {
                        field: "minimum_calls",
                        rule: "at least 1 and at most `sliding_window`",
                    });
                }
                Trip::Rate {
                    rate,
                    window,
                    minimum_calls,
                }
            }
        };
        if self.reset_timeout.is_zero() {
            return Err(E::Zero {
                field: "reset_timeout",
            });
        }
        if self.half_open_probes == 0 {
            return Err(E::Zero {
                field: "half_open_probes",
            });
        }
        let window = match trip {
            Trip::Rate { window, .. } => window as usize,
            Trip::Consecutive(_) => 0,
        };
        Ok(CircuitBreaker {
            name: self.name,
            trip,
            reset_timeout: self.reset_timeout,
            half_open_probes: self.half_open_probes,
            inner: Mutex::new(Inner {
                phase: Phase::Closed,
                epoch: 0,
                consecutive_failures: 0,
                outcomes: vec![false; window],
                next: 0,
                filled: 0,
                failures_in_window: 0,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(b: &CircuitBreaker) {
        if let Ok(p) = b.try_acquire() {
            b.record(p, false);
        }
    }

    fn succeed(b: &CircuitBreaker) {
        if let Ok(p) = b.try_acquire() {
            b.record(p, true);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn opens_at_the_threshold_and_a_success_resets_the_count() {
        let b = CircuitBreaker::builder()
            .failure_threshold(3)
            .build()
            .unwrap();
        fail(&b);
        fail(&b);
        succeed(&b);
        fail(&b);
        fail(&b);
        assert_eq!(b.state(), BreakerState::Closed);
        fail(&b);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.try_acquire().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_admits_exactly_the_probes_and_closes_when_all_succeed() {
        let b = CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(Duration::from_secs(10))
            .half_open_probes(3)
            .build()
            .unwrap();
        fail(&b);
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(b.state(), BreakerState::Open);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let probes: Vec<_> = (0..5).filter_map(|_| b.try_acquire().ok()).collect();
        assert_eq!(probes.len(), 3);
        b.record(probes[0], true);
        b.record(probes[1], true);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.record(probes[2], true);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_reopens_and_late_outcomes_are_ignored() {
        let b = CircuitBreaker::builder()
            .failure_threshold(1)
            .half_open_probes(2)
            .build()
            .unwrap();
        let before_trip = b.try_acquire().unwrap();
        fail(&b);
        b.record(before_trip, true); // from the old epoch: ignored
        assert_eq!(b.state(), BreakerState::Open);
        tokio::time::sleep(Duration::from_secs(30)).await;
        let probe = b.try_acquire().unwrap();
        b.record(probe, false);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_never_reports_frees_its_slot_after_reset_timeout() {
        let b = CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        fail(&b);
        tokio::time::sleep(Duration::from_secs(5)).await;
        let lost = b.try_acquire().unwrap(); // its call is cancelled: never recorded
        assert!(b.try_acquire().is_err());
        tokio::time::sleep(Duration::from_secs(5)).await;
        let probe = b.try_acquire().unwrap();
        b.record(lost, true); // stale round: ignored
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.record(probe, true);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_mode_waits_for_minimum_calls_and_slides() {
        let b = CircuitBreaker::builder()
            .failure_rate(0.5)
            .sliding_window(4)
            .minimum_calls(4)
            .build()
            .unwrap();
        fail(&b);
        fail(&b);
        fail(&b);
        assert_eq!(b.state(), BreakerState::Closed, "3 calls < minimum 4");
        let b = CircuitBreaker::builder()
            .failure_rate(0.5)
            .sliding_window(4)
            .minimum_calls(2)
            .build()
            .unwrap();
        for _ in 0..10 {
            succeed(&b);
        }
        fail(&b); // window: s s s f → 25 %
        assert_eq!(b.state(), BreakerState::Closed);
        fail(&b); // s s f f → 50 %
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn half_open_admits_exactly_the_probes_under_concurrent_callers() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        // The breaker's clock is tokio's: open it and let reset_timeout pass on the paused clock,
        // then race eight threads for the probes (reading the clock outside the runtime is fine:
        // half-open was entered inside it).
        let b = runtime.block_on(async {
            let b = CircuitBreaker::builder()
                .failure_threshold(1)
                .reset_timeout(Duration::from_secs(1))
                .half_open_probes(3)
                .build()
                .unwrap();
            fail(&b);
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert_eq!(b.state(), BreakerState::HalfOpen);
            b
        });
        let admitted = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        if b.try_acquire().is_ok() {
                            admitted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.load(std::sync::atomic::Ordering::Relaxed), 3);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let field = |b: CircuitBreakerBuilder| b.build().unwrap_err().field();
        let b = CircuitBreaker::builder();
        assert_eq!(field(b.failure_threshold(0)), "failure_threshold");
        assert_eq!(field(b.reset_timeout(Duration::ZERO)), "reset_timeout");
        assert_eq!(field(b.half_open_probes(0)), "half_open_probes");
        assert_eq!(field(b.failure_rate(0.0)), "failure_rate");
        assert_eq!(field(b.failure_rate(1.5)), "failure_rate");
        assert_eq!(field(b.failure_rate(f64::NAN)), "failure_rate");
        assert_eq!(
            field(b.failure_rate(0.5).sliding_window(0)),
            "sliding_window"
        );
        assert_eq!(
            field(b.failure_rate(0.5).sliding_window(5).minimum_calls(6)),
            "minimum_calls"
        );
        assert_eq!(
            field(b.failure_rate(0.5).failure_threshold(3)),
            "failure_rate"
        );
        assert_eq!(field(b.sliding_window(10)), "sliding_window");
    }
}
