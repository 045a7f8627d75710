//! Property tests of the retry schedule over the whole valid policy space: the bounds of every
//! backoff and jitter, the number of sleeps, the attempt engine's rules, and the builder's
//! validation; plus statistical checks of the jitter means.

use std::convert::Infallible;
use std::time::Duration;

use proptest::prelude::*;
use rand::{SeedableRng, rngs::SmallRng};
use retry_runtime::__private::{Decision, Engine, Start};
use retry_runtime::{Backoff, GiveUpReason, Jitter, RetryPolicy, RetryPolicyBuilder, SampleJitter};
use tokio::time::Instant;

const HOUR_NS: u64 = 3_600_000_000_000;
const CENTURY_NS: u64 = 100 * 365 * 24 * HOUR_NS;
/// How many sleeps of one schedule the unbounded properties look at.
const STEPS: usize = 100;

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// A whole number of nanoseconds in `1..=max`, spread evenly over the orders of magnitude.
fn log_nanos(max: u64) -> impl Strategy<Value = u64> {
    let bits = 64 - max.leading_zeros();
    (0..=bits, any::<u64>()).prop_map(move |(b, r)| {
        let v = if b == 0 { 1 } else { (r >> (64 - b)).max(1) };
        v.min(max)
    })
}

fn duration_up_to(max: u64) -> impl Strategy<Value = Duration> {
    log_nanos(max).prop_map(Duration::from_nanos)
}

fn any_backoff() -> impl Strategy<Value = Backoff> {
    prop_oneof![
        1 => Just(Backoff::Fixed),
        1 => Just(Backoff::Linear),
        2 => Just(Backoff::Exponential),
    ]
}

/// A valid proportional factor: in (0, 1], edges included.
fn valid_factor() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(1.0),
        1 => Just(0.5),
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(f64::from_bits(1)),
        1 => Just(1.0 - f64::EPSILON / 2.0),
        4 => (0.0..=1.0f64).prop_filter("positive", |f| *f > 0.0),
    ]
}

fn valid_jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated),
        valid_factor().prop_map(Jitter::Proportional),
    ]
}

/// A valid multiplier (used only with exponential backoff), or none for the default.
fn valid_multiplier() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(1.0)),
        1 => Just(Some(1.000_000_1)),
        1 => Just(Some(1e6)),
        2 => (1.0..=2.0f64).prop_map(Some),
        2 => (1.0..=1e6f64).prop_map(Some),
    ]
}

/// `timeout` or `max_elapsed`: unset, anything from 1 ns to a century, or `Duration::MAX`.
fn valid_limit() -> impl Strategy<Value = Option<Duration>> {
    prop_oneof![
        2 => Just(None),
        2 => duration_up_to(CENTURY_NS).prop_map(Some),
        1 => Just(Some(Duration::MAX)),
    ]
}

#[derive(Debug, Clone, Copy)]
enum MaxDelay {
    /// Not set: the builder's default.
    Default,
    /// `delay` plus this many nanoseconds (0 gives `max_delay == delay`).
    Above(u64),
    /// `Duration::MAX`.
    Max,
}

fn valid_max_delay() -> impl Strategy<Value = MaxDelay> {
    prop_oneof![
        1 => Just(MaxDelay::Default),
        1 => Just(MaxDelay::Above(0)),
        1 => Just(MaxDelay::Max),
        5 => log_nanos(CENTURY_NS).prop_map(MaxDelay::Above),
    ]
}

fn many_attempts() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => 1..=50u32,
        1 => 51..=2000u32,
        1 => 1_000_000..=RetryPolicy::MAX_ATTEMPTS,
        1 => Just(RetryPolicy::MAX_ATTEMPTS),
    ]
}

/// The settings of a valid policy.
#[derive(Debug, Clone)]
struct Spec {
    max_attempts: u32,
    delay: Duration,
    backoff: Backoff,
    multiplier: Option<f64>,
    max_delay: Option<Duration>,
    jitter: Jitter,
    timeout: Option<Duration>,
    max_elapsed: Option<Duration>,
}

impl Spec {
    fn builder(&self) -> RetryPolicyBuilder {
        let mut b = RetryPolicy::builder()
            .max_attempts(self.max_attempts)
            .delay(self.delay)
            .backoff(self.backoff)
            .jitter(self.jitter);
        if let Some(m) = self.multiplier {
            b = b.multiplier(m);
        }
        if let Some(d) = self.max_delay {
            b = b.max_delay(d);
        }
        if let Some(d) = self.timeout {
            b = b.timeout(d);
        }
        if let Some(d) = self.max_elapsed {
            b = b.max_elapsed(d);
        }
        b
    }

    fn policy(&self) -> RetryPolicy {
        self.builder()
            .build()
            .unwrap_or_else(|e| panic!("a valid policy was rejected: {e} ({self:?})"))
    }
}

fn valid_spec(attempts: impl Strategy<Value = u32>) -> impl Strategy<Value = Spec> {
    (
        attempts,
        duration_up_to(HOUR_NS),
        any_backoff(),
        valid_multiplier(),
        valid_max_delay(),
        valid_jitter(),
        valid_limit(),
        valid_limit(),
    )
        .prop_map(
            |(
                max_attempts,
                delay,
                backoff,
                multiplier,
                max_delay,
                jitter,
                timeout,
                max_elapsed,
            )| {
                Spec {
                    max_attempts,
                    delay,
                    backoff,
                    multiplier: multiplier.filter(|_| backoff == Backoff::Exponential),
                    max_delay: match max_delay {
                        MaxDelay::Default => None,
                        MaxDelay::Above(ns) => Some(delay.saturating_add(Duration::from_nanos(ns))),
                        MaxDelay::Max => Some(Duration::MAX),
                    },
                    jitter,
                    timeout,
                    max_elapsed,
                }
            },
        )
}

/// Builder input that may break any rule.
#[derive(Debug, Clone)]
struct Raw {
    max_attempts: u32,
    delay: Option<Duration>,
    backoff: Backoff,
    multiplier: Option<f64>,
    max_delay: RawMaxDelay,
    jitter: Jitter,
    timeout: Option<Duration>,
    max_elapsed: Option<Duration>,
}

#[derive(Debug, Clone, Copy)]
enum RawMaxDelay {
    Unset,
    Exactly(Duration),
    /// The effective `delay` plus this many nanoseconds (may be negative).
    NearDelay(i8),
}

fn bad_floats() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        -1.0,
        0.5,
        1.0 - f64::EPSILON / 2.0,
        1.0 + f64::EPSILON,
        2.0,
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN,
        f64::MAX,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
    ]
}

fn raw_builder() -> impl Strategy<Value = Raw> {
    let attempts = prop_oneof![1 => Just(0u32), 6 => 1..=50u32, 1 => any::<u32>()];
    let delay = prop_oneof![
        1 => Just(None),
        1 => Just(Some(Duration::ZERO)),
        6 => duration_up_to(HOUR_NS).prop_map(Some),
        1 => Just(Some(Duration::MAX)),
    ];
    let multiplier = prop_oneof![
        3 => Just(None),
        3 => (1.0..=1e6f64).prop_map(Some),
        1 => Just(Some(1.0)),
        2 => prop::sample::select(bad_floats()).prop_map(Some),
        1 => any::<f64>().prop_map(Some),
    ];
    let max_delay = prop_oneof![
        2 => Just(RawMaxDelay::Unset),
        1 => Just(RawMaxDelay::Exactly(Duration::ZERO)),
        1 => Just(RawMaxDelay::Exactly(Duration::MAX)),
        3 => duration_up_to(CENTURY_NS).prop_map(RawMaxDelay::Exactly),
        2 => (-3..=3i8).prop_map(RawMaxDelay::NearDelay),
    ];
    let jitter = prop_oneof![
        4 => valid_jitter(),
        1 => prop::sample::select(bad_floats()).prop_map(Jitter::Proportional),
        1 => any::<f64>().prop_map(Jitter::Proportional),
    ];
    let limit = || {
        prop_oneof![
            2 => Just(None),
            1 => Just(Some(Duration::ZERO)),
            2 => duration_up_to(CENTURY_NS).prop_map(Some),
            1 => Just(Some(Duration::MAX)),
        ]
    };
    (
        attempts,
        delay,
        prop_oneof![2 => Just(Backoff::Exponential), 1 => Just(Backoff::Fixed), 1 => Just(Backoff::Linear)],
        multiplier,
        max_delay,
        jitter,
        limit(),
        limit(),
    )
        .prop_map(
            |(max_attempts, delay, backoff, multiplier, max_delay, jitter, timeout, max_elapsed)| {
                Raw {
                    max_attempts,
                    delay,
                    backoff,
                    multiplier,
                    max_delay,
                    jitter,
                    timeout,
                    max_elapsed,
                }
            },
        )
}

impl Raw {
    fn effective_delay(&self) -> Duration {
        self.delay.unwrap_or(RetryPolicy::DEFAULT_DELAY)
    }

    fn max_delay(&self) -> Option<Duration> {
        match self.max_delay {
            RawMaxDelay::Unset => None,
            RawMaxDelay::Exactly(d) => Some(d),
            RawMaxDelay::NearDelay(k) => {
                let step = Duration::from_nanos(u64::from(k.unsigned_abs()));
                Some(if k < 0 {
                    self.effective_delay().saturating_sub(step)
                } else {
                    self.effective_delay().saturating_add(step)
                })
            }
        }
    }

    fn builder(&self) -> RetryPolicyBuilder {
        let mut b = RetryPolicy::builder()
            .max_attempts(self.max_attempts)
            .backoff(self.backoff)
            .jitter(self.jitter);
        if let Some(d) = self.delay {
            b = b.delay(d);
        }
        if let Some(m) = self.multiplier {
            b = b.multiplier(m);
        }
        if let Some(d) = self.max_delay() {
            b = b.max_delay(d);
        }
        if let Some(d) = self.timeout {
            b = b.timeout(d);
        }
        if let Some(d) = self.max_elapsed {
            b = b.max_elapsed(d);
        }
        b
    }

    /// The fields whose rules these settings break, in the order the builder checks them.
    fn broken_fields(&self) -> Vec<&'static str> {
        let mut broken = vec![];
        let delay = self.effective_delay();
        if self.max_attempts == 0 || self.max_attempts > RetryPolicy::MAX_ATTEMPTS {
            broken.push("max_attempts");
        }
        if delay.is_zero() {
            broken.push("delay");
        }
        if let Some(m) = self.multiplier {
            let in_range = m.is_finite() && m >= 1.0;
            if self.backoff != Backoff::Exponential || !in_range {
                broken.push("multiplier");
            }
        }
        if let Some(max_delay) = self.max_delay() {
            if max_delay.is_zero() {
                broken.push("max_delay");
            }
            // The setting at fault is `delay` if it was set, else `max_delay` (below the default).
            if delay > max_delay {
                broken.push(if self.delay.is_some() {
                    "delay"
                } else {
                    "max_delay"
                });
            }
        }
        if let Jitter::Proportional(f) = self.jitter
            && !(f > 0.0 && f <= 1.0)
        {
            broken.push("jitter");
        }
        if self.timeout == Some(Duration::ZERO) {
            broken.push("timeout");
        }
        if self.max_elapsed == Some(Duration::ZERO) {
            broken.push("max_elapsed");
        }
        broken
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn nanos(d: Duration) -> u128 {
    d.as_nanos().min(u128::from(u64::MAX))
}

/// ⌊d·f⌋ and ⌈d·f⌉ for `f` in [0, 1], computed exactly from the bits of `f`.
fn exact_product(d: u128, f: f64) -> (u128, u128) {
    let bits = f.to_bits();
    let exponent = (bits >> 52) & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    // f = mantissa × 2^−shift
    let (mantissa, shift) = if exponent == 0 {
        (fraction, 1074)
    } else {
        (fraction | (1 << 52), 1075 - exponent)
    };
    let product = d * u128::from(mantissa);
    if shift >= 128 {
        return (0, u128::from(product != 0));
    }
    let floor = product >> shift;
    let exact = product & ((1u128 << shift) - 1) == 0;
    (floor, floor + u128::from(!exact))
}

/// The un-jittered delay before retry `n` of `p`.
fn backoff_delay(p: &RetryPolicy, n: u32) -> Duration {
    p.backoff()
        .delay(n, p.delay(), p.multiplier(), p.max_delay())
}

/// Checks one sleep against its jitter's range around `d` (the backoff's delay), `previous`
/// being the sleep before it (`delay` before the first).
fn check_jitter_bounds(
    p: &RetryPolicy,
    d: Duration,
    previous: Duration,
    sleep: Duration,
) -> Result<(), TestCaseError> {
    match p.jitter() {
        Jitter::None => prop_assert_eq!(sleep, d),
        Jitter::Full => prop_assert!(sleep <= d, "full {:?} > d {:?}", sleep, d),
        Jitter::Equal => prop_assert!(
            sleep >= d / 2 && sleep <= d,
            "equal {:?} outside [{:?}, {:?}]",
            sleep,
            d / 2,
            d
        ),
        Jitter::Decorrelated => {
            let high = previous.saturating_mul(3).max(p.delay()).min(p.max_delay());
            prop_assert!(
                sleep >= p.delay() && sleep <= high,
                "decorrelated {:?} outside [{:?}, {:?}]",
                sleep,
                p.delay(),
                high
            );
        }
        Jitter::Proportional(f) => {
            let d_ns = nanos(d);
            let (_, df_ceil) = exact_product(d_ns, f);
            // 1 ns of rounding; for d ≥ 2^50 ns (13 days) f64 precision allows a little more.
            let tolerance = 1 + (d_ns >> 50);
            let low = d_ns.saturating_sub(df_ceil + tolerance);
            let high = (d_ns + df_ceil + tolerance).min(u128::from(u64::MAX));
            prop_assert!(
                (low..=high).contains(&sleep.as_nanos()),
                "proportional({}) {:?} outside [{}, {}] ns (d = {:?})",
                f,
                sleep,
                low,
                high,
                d
            );
        }
    }
    if !matches!(p.jitter(), Jitter::Proportional(_)) {
        prop_assert!(sleep <= p.max_delay());
    }
    Ok(())
}

/// A generator that always gives the same bits: all zeros draws the low end of every range, all
/// ones the high end, so the extremes of each jitter are checked, not just likely values.
struct Constant(u64);

impl rand::TryRng for Constant {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(u32::try_from(self.0 >> 32).unwrap_or(u32::MAX))
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        dst.fill(self.0.to_le_bytes()[0]);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Without jitter every sleep is the backoff's delay: at least `delay`, at most `max_delay`,
    /// never shrinking (exact for fixed and linear).
    #[test]
    fn unjittered_delays_are_capped_and_never_decrease(
        spec in valid_spec(many_attempts()),
        n in any::<u32>(),
    ) {
        let p = Spec { jitter: Jitter::None, ..spec }.policy();
        let mut previous = Duration::ZERO;
        for (i, sleep) in p.delays().take(STEPS).enumerate() {
            let retry = u32::try_from(i + 1).unwrap();
            prop_assert_eq!(sleep, backoff_delay(&p, retry));
            prop_assert!(sleep <= p.max_delay(), "retry {}: {:?} > {:?}", retry, sleep, p.max_delay());
            prop_assert!(sleep >= p.delay(), "retry {}: {:?} < {:?}", retry, sleep, p.delay());
            prop_assert!(sleep >= previous, "retry {}: {:?} after {:?}", retry, sleep, previous);
            let expected = match p.backoff() {
                Backoff::Fixed => Some(nanos(p.delay())),
                Backoff::Linear => Some(nanos(p.delay()) * u128::from(retry)),
                Backoff::Exponential if p.multiplier().to_bits() == 1.0f64.to_bits() => {
                    Some(nanos(p.delay()))
                }
                Backoff::Exponential => None,
            };
            if let Some(expected) = expected {
                prop_assert_eq!(sleep.as_nanos(), expected.min(nanos(p.max_delay())));
            }
            previous = sleep;
        }
        // Far along the schedule (the iterator above stops after STEPS).
        let far = backoff_delay(&p, n);
        prop_assert!(far <= p.max_delay());
        if let Some(next) = n.checked_add(1) {
            prop_assert!(backoff_delay(&p, next) >= far, "retry {} shrinks", next);
        }
        prop_assert!(backoff_delay(&p, u32::MAX) <= p.max_delay());
    }

    /// Every jittered sleep stays within its variant's range around the backoff's delay `d`.
    #[test]
    fn jittered_sleeps_stay_in_their_bounds(spec in valid_spec(many_attempts()), seed in any::<u64>()) {
        let p = spec.policy();
        let mut previous = p.delay();
        for (i, sleep) in p.delays_seeded(seed).take(STEPS).enumerate() {
            let retry = u32::try_from(i + 1).unwrap();
            check_jitter_bounds(&p, backoff_delay(&p, retry), previous, sleep)?;
            previous = sleep;
        }
        // The same seed gives the same schedule.
        prop_assert!(p.delays_seeded(seed).take(STEPS).eq(p.delays_seeded(seed).take(STEPS)));
    }

    /// The extremes of each jitter's range (drawn with all-zero and all-one generators) stay in
    /// bounds too, for any retry number and any previous sleep.
    #[test]
    fn jitter_extremes_stay_in_their_bounds(
        spec in valid_spec(many_attempts()),
        retry in prop_oneof![1..=64u32, any::<u32>()],
        previous_extra in prop_oneof![Just(0), log_nanos(CENTURY_NS)],
        bits in prop_oneof![Just(0), Just(u64::MAX)],
    ) {
        let p = spec.policy();
        let d = backoff_delay(&p, retry);
        let previous = p.delay().saturating_add(Duration::from_nanos(previous_extra));
        let sleep = p.jitter().apply(d, previous, p.delay(), p.max_delay(), &mut Constant(bits));
        check_jitter_bounds(&p, d, previous, sleep)?;
    }

    /// A policy sleeps once between each two attempts: `max_attempts − 1` times.
    #[test]
    fn delays_count_is_max_attempts_minus_one(
        spec in valid_spec(1..=2000u32),
        seed in any::<u64>(),
    ) {
        let p = spec.policy();
        let expected = usize::try_from(p.max_attempts() - 1).unwrap();
        prop_assert_eq!(p.delays().size_hint(), (expected, Some(expected)));
        prop_assert_eq!(p.delays().count(), expected);
        let mut seeded = p.delays_seeded(seed);
        prop_assert_eq!(seeded.by_ref().count(), expected);
        prop_assert_eq!(seeded.next(), None);
        prop_assert_eq!(seeded.size_hint(), (0, Some(0)));
    }

    /// `Jitter::apply` never panics, whatever the durations.
    #[test]
    fn jitter_apply_never_panics(
        jitter in valid_jitter(),
        d in prop_oneof![duration_up_to(u64::MAX), Just(Duration::MAX)],
        previous in prop_oneof![duration_up_to(u64::MAX), Just(Duration::MAX)],
        delay in prop_oneof![duration_up_to(u64::MAX), Just(Duration::MAX)],
        max_delay in prop_oneof![duration_up_to(u64::MAX), Just(Duration::MAX)],
        seed in any::<u64>(),
    ) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let sleep = jitter.apply(d, previous, delay, max_delay, &mut rng);
        prop_assert!(sleep.as_nanos() <= u128::from(u64::MAX));
    }

    /// Driving the engine with any outcomes, hints and attempt durations never panics, and every
    /// verdict follows the rules: non-retryable stops, `max_attempts` bounds the attempts, a hint
    /// is a floor under the delay and one beyond `max_delay` or the deadline ends the call, and no
    /// sleep ends at or past the deadline.
    #[test]
    fn engine_never_panics_and_keeps_its_rules(
        spec in valid_spec(many_attempts()),
        steps in prop::collection::vec(
            (
                prop::bool::weighted(0.9),
                prop_oneof![
                    6 => Just(None),
                    2 => duration_up_to(CENTURY_NS).prop_map(Some),
                    1 => Just(Some(Duration::ZERO)),
                    1 => Just(Some(Duration::MAX)),
                ],
                prop_oneof![Just(Duration::ZERO), duration_up_to(CENTURY_NS)],
            ),
            0..60,
        ),
        seed in any::<u64>(),
    ) {
        retry_runtime::seed_rng(seed);
        let p = spec.policy();
        let t0 = Instant::now();
        let mut now = t0;
        let mut engine = Engine::new(&p);
        prop_assert_eq!(engine.attempt(), 0);
        let key = engine.idempotency_key();
        for (i, (retryable, hint, attempt_takes)) in steps.into_iter().enumerate() {
            let start = engine.begin(true, || now, None);
            let attempt = engine.attempt();
            prop_assert_eq!(attempt, u32::try_from(i + 1).unwrap());
            match start {
                Start::Run(Some(limit)) => {
                    prop_assert!(Some(limit) <= p.timeout());
                    prop_assert!(limit > Duration::ZERO);
                    if let Some(deadline) = engine.deadline() {
                        prop_assert!(limit <= deadline.saturating_duration_since(now));
                    }
                }
                Start::Run(None) => prop_assert_eq!(p.timeout(), None),
                Start::NotMade => {
                    // Only a timed attempt with no time left before the deadline is not made.
                    prop_assert!(p.timeout().is_some());
                    prop_assert!(engine.deadline().is_some_and(|d| d <= now));
                    prop_assert!(engine.not_made());
                }
            }
            let Some(failed_at) = now.checked_add(attempt_takes) else { break };
            now = failed_at;
            let verdict = engine.after_failure(retryable, hint, now);
            if p.max_elapsed().is_none() {
                prop_assert_eq!(engine.deadline(), None);
            }
            match verdict {
                Decision::Retry(sleep) => {
                    prop_assert!(retryable);
                    prop_assert!(attempt < p.max_attempts());
                    match hint {
                        // A hint is a floor, and never cut: one beyond max_delay ends the call.
                        Some(h) => {
                            prop_assert!(sleep >= h);
                            prop_assert!(h <= p.max_delay());
                            if !matches!(p.jitter(), Jitter::Proportional(_)) {
                                prop_assert!(sleep <= p.max_delay());
                            }
                        }
                        None if !matches!(p.jitter(), Jitter::Proportional(_)) => {
                            prop_assert!(sleep <= p.max_delay());
                        }
                        None => {}
                    }
                    // Without a deadline a sleep may be too long for the clock (a hint or
                    // `max_delay` of `Duration::MAX`); with one it must end before it.
                    let wakes = now.checked_add(sleep);
                    if let Some(deadline) = engine.deadline() {
                        prop_assert!(wakes.is_some_and(|w| w < deadline));
                    }
                    match wakes {
                        Some(wakes) => now = wakes,
                        None => break,
                    }
                }
                Decision::Stop(GiveUpReason::NotRetryable) => {
                    prop_assert!(!retryable);
                    break;
                }
                Decision::Stop(GiveUpReason::Exhausted) => {
                    prop_assert!(retryable);
                    prop_assert!(attempt >= p.max_attempts());
                    break;
                }
                Decision::Stop(GiveUpReason::DeadlineReached) => {
                    prop_assert!(retryable);
                    prop_assert!(attempt < p.max_attempts());
                    prop_assert!(p.max_elapsed().is_some());
                    // A hint, if any, was within max_delay and did not set the wait.
                    prop_assert!(hint.is_none_or(|h| h <= p.max_delay()));
                    break;
                }
                Decision::Stop(GiveUpReason::RetryAfterTooLong) => {
                    prop_assert!(retryable);
                    prop_assert!(attempt < p.max_attempts());
                    let h = hint.expect("only a hint can be too long");
                    let past_deadline = engine
                        .deadline()
                        .is_some_and(|d| now.checked_add(h).is_none_or(|w| w >= d));
                    prop_assert!(h > p.max_delay() || past_deadline);
                    break;
                }
                Decision::Stop(other) => prop_assert!(false, "unknown reason {:?}", other),
            }
        }
        prop_assert_eq!(engine.idempotency_key(), key);
    }

    /// `build()` fails exactly when a rule is broken, and the error names a broken field (the
    /// broken field, when there is one).
    #[test]
    fn builder_rejects_exactly_the_invalid_values(raw in raw_builder()) {
        let broken = raw.broken_fields();
        match raw.builder().build() {
            Ok(p) => {
                prop_assert!(broken.is_empty(), "accepted although {:?} are broken", broken);
                let delay = raw.effective_delay();
                prop_assert_eq!(p.max_attempts(), raw.max_attempts);
                prop_assert_eq!(p.delay(), delay);
                prop_assert_eq!(p.backoff(), raw.backoff);
                prop_assert_eq!(
                    p.multiplier().to_bits(),
                    raw.multiplier.unwrap_or(RetryPolicy::DEFAULT_MULTIPLIER).to_bits()
                );
                let default_max_delay = RetryPolicy::DEFAULT_MAX_DELAY.max(delay);
                prop_assert_eq!(p.max_delay(), raw.max_delay().unwrap_or(default_max_delay));
                prop_assert_eq!(p.jitter(), raw.jitter);
                prop_assert_eq!(p.timeout(), raw.timeout);
                prop_assert_eq!(p.max_elapsed(), raw.max_elapsed);
            }
            Err(e) => {
                prop_assert!(!broken.is_empty(), "rejected a valid policy: {}", e);
                prop_assert!(
                    broken.contains(&e.field()),
                    "error names `{}` but the broken fields are {:?}", e.field(), broken
                );
                if broken.len() == 1 {
                    prop_assert_eq!(e.field(), broken[0]);
                }
                let prefix = format!("invalid `{}`: ", e.field());
                prop_assert!(e.to_string().starts_with(&prefix), "{}", e);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

const SAMPLES: u64 = 10_000;

/// The first sleep with `delay` = 1 s under `jitter`, for seeds `0..SAMPLES`, in milliseconds.
fn first_sleeps_ms(jitter: Jitter) -> Vec<f64> {
    let p = RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_secs(1))
        .jitter(jitter)
        .build()
        .unwrap();
    (0..SAMPLES)
        .map(|seed| p.delays_seeded(seed).next().unwrap().as_secs_f64() * 1000.0)
        .collect()
}

fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / f64::from(u32::try_from(samples.len()).unwrap())
}

fn assert_within_3_percent(jitter: Jitter, expected_ms: f64) -> Vec<f64> {
    let samples = first_sleeps_ms(jitter);
    let m = mean(&samples);
    assert!(
        (m - expected_ms).abs() <= expected_ms * 0.03,
        "{jitter:?}: mean {m} ms, expected {expected_ms} ms ± 3%"
    );
    samples
}

#[test]
fn full_jitter_mean_is_half_the_delay() {
    let samples = assert_within_3_percent(Jitter::Full, 500.0);
    assert!(samples.iter().all(|s| (0.0..=1000.0).contains(s)));
    // It spreads over the whole range.
    assert!(samples.iter().any(|s| *s < 10.0));
    assert!(samples.iter().any(|s| *s > 990.0));
}

#[test]
fn equal_jitter_mean_is_three_quarters_of_the_delay() {
    let samples = assert_within_3_percent(Jitter::Equal, 750.0);
    assert!(samples.iter().all(|s| (500.0..=1000.0).contains(s)));
    assert!(samples.iter().any(|s| *s < 510.0));
    assert!(samples.iter().any(|s| *s > 990.0));
}

#[test]
fn proportional_jitter_mean_is_the_delay() {
    let samples = assert_within_3_percent(Jitter::Proportional(0.5), 1000.0);
    assert!(samples.iter().all(|s| (500.0..=1500.0).contains(s)));
}

#[test]
fn decorrelated_first_sleep_is_uniform_between_delay_and_three_delays() {
    let samples = assert_within_3_percent(Jitter::Decorrelated, 2000.0);
    assert!(samples.iter().all(|s| (1000.0..=3000.0).contains(s)));
}

#[test]
fn exact_product_helper_is_exact() {
    assert_eq!(exact_product(10, 0.5), (5, 5));
    assert_eq!(exact_product(3, 0.5), (1, 2));
    assert_eq!(exact_product(7, 1.0), (7, 7));
    assert_eq!(exact_product(1000, 0.1), (100, 101)); // 0.1 is slightly above 1/10
    assert_eq!(exact_product(5, f64::from_bits(1)), (0, 1));
    assert_eq!(exact_product(0, 0.3), (0, 0));
}
