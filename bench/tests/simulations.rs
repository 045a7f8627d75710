//! The simulators of BENCHMARKS.md on a small sweep, checking the shape of their results (never
//! timing): jitter spreads contention, a shared budget stops an outage from being multiplied, and
//! under partial overload the adaptive throttle holds what reaches the backend near K × what it
//! accepts.
//! The models are the examples' own (`reattempt_bench::sim`, in `bench/src/sim/`), driven by
//! the runtime's policies, budget and breaker.

use std::time::Duration;

use reattempt::Jitter;
use reattempt_bench::sim::fleet;
use reattempt_bench::sim::occ;
use reattempt_bench::sim::overload::{self, Strategy as S};
use reattempt_bench::sim::storm::{self, Scenario, Strategy, Summary};

#[test]
fn at_100_clients_full_jitter_does_less_than_half_the_work_of_no_jitter() {
    let runs = 10;
    let none = occ::cell(100, Jitter::None, runs, 7);
    let full = occ::cell(100, Jitter::Full, runs, 7);
    let equal = occ::cell(100, Jitter::Equal, runs, 7);
    let decorrelated = occ::cell(100, Jitter::Decorrelated, runs, 7);
    assert!(full.calls < none.calls / 2.0, "{full:?} vs {none:?}");
    assert!(
        (equal.calls / full.calls - 1.0).abs() < 0.15,
        "equal ≈ full: {equal:?} vs {full:?}"
    );
    assert!(
        decorrelated.calls > full.calls && decorrelated.calls < none.calls,
        "decorrelated between full and none: {decorrelated:?}"
    );
    assert!(full.time_ms < none.time_ms / 5.0, "{full:?} vs {none:?}");
}

#[test]
fn in_an_outage_a_shared_budget_keeps_amplification_near_one() {
    let scenario = Scenario {
        clients: 200,
        call_interval: Duration::from_secs(1),
        capacity: 300,
        outage_start: Duration::from_secs(5),
        // The default budget pays for 100 retries in all: over a 10 s outage of 200 clients
        // (about 2000 calls) that is 1.05 attempts per call.
        outage: Duration::from_secs(10),
        end: Duration::from_secs(20),
        seed: 11,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let summary = |strategy| {
        let trace = runtime.block_on(storm::simulate(&scenario, strategy));
        Summary::of(&scenario, &trace)
    };
    let plain = summary(Strategy::FullJitter);
    let budget = summary(Strategy::Budget);
    let none = summary(Strategy::NoRetry);
    assert!(
        plain.amplification > 3.0,
        "plain retries multiply the outage: {plain:?}"
    );
    assert!(
        budget.amplification <= 1.1,
        "the budget holds it near 1: {budget:?}"
    );
    assert!((none.amplification - 1.0).abs() < 1e-9, "{none:?}");
}

#[test]
fn under_partial_overload_the_guards_keep_what_they_promise() {
    let scenario = overload::Scenario {
        clients: 200,
        capacity: 200,
        overload_start: Duration::from_secs(5),
        overload_len: Duration::from_secs(20),
        end: Duration::from_secs(45),
        // Shorter than the overload, so that its steady part is what the window holds.
        throttle_window: Duration::from_secs(5),
        seed: 3,
        ..overload::Scenario::standard()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let run = |strategy| runtime.block_on(overload::simulate(&scenario, strategy));
    let summary = |strategy| overload::Summary::of(&scenario, &run(strategy));
    let none = summary(S::NoRetry);
    let plain = summary(S::Retries);
    let budget = summary(S::Budget);
    let throttle = summary(S::Throttle);
    let both = summary(S::ThrottleBudget);
    let bulkhead = summary(S::Bulkhead);

    // Rejections cost the backend: plain retries send more and get less served.
    assert!(
        plain.arrivals > 2.0 * none.arrivals,
        "{plain:?} vs {none:?}"
    );
    assert!(plain.goodput < none.goodput, "{plain:?} vs {none:?}");
    // The budget pays for 100 retries (500 tokens, 5 each), then one per 5 first-try successes,
    // plus the retries of calls that then succeed (refunded): retries ≤ 100 + 1.2 × served.
    let secs = scenario.overload_len.as_secs_f64();
    let served = budget.goodput * f64::from(scenario.capacity) * secs;
    assert!(
        (budget.arrivals - none.arrivals) * secs <= 100.0 + 1.2 * served,
        "{budget:?} vs {none:?}"
    );
    assert!(budget.arrivals < plain.arrivals, "{budget:?} vs {plain:?}");
    // The throttle's invariant once its window holds the overload: arrivals ≤ K × accepts + 5 %.
    for t in [&throttle, &both] {
        assert!(t.arrivals_per_accept_steady <= overload::K * 1.05, "{t:?}");
        assert!(
            t.goodput > plain.goodput && t.goodput > none.goodput,
            "{t:?} vs {none:?}"
        );
        assert!(t.local > 0.0, "it sheds locally: {t:?}");
        assert!(t.recovery.is_some(), "recovered before the end: {t:?}");
    }
    // The bulkhead caps the calls in flight: no amplification beyond what they can send.
    assert!(
        bulkhead.arrivals < plain.arrivals,
        "{bulkhead:?} vs {plain:?}"
    );
    assert!(bulkhead.recovery.is_some(), "{bulkhead:?}");

    // The same seed gives the same run (the table compares strategies on the same arrivals).
    let again = |strategy| format!("{:?}", run(strategy).bins);
    assert_eq!(again(S::Throttle), again(S::Throttle));
    assert_eq!(again(S::Bulkhead), again(S::Bulkhead));
}

/// The hedging simulation on a short run (the example runs 200 000 calls): hedging halves the
/// p99 at low load for a few percent more requests; at 90 % an unbudgeted fixed delay hedges
/// nearly every call and the queues run away, while the budget holds hedges near 5 %.
#[test]
fn hedging_cuts_the_tail_at_low_load_and_the_budget_keeps_it_safe_at_high_load() {
    use reattempt_bench::sim::hedge::{self, Scenario, Strategy};
    let scenario = |utilisation| Scenario {
        replicas: 10,
        median: Duration::from_millis(10),
        sigma: 0.4,
        straggler_rate: 0.015,
        straggler_factor: 10.0,
        utilisation,
        calls: 30_000,
        seed: 3,
    };
    let fixed = Strategy::Fixed(Duration::from_millis(50));
    let budgeted = Strategy::FixedBudget(Duration::from_millis(50));

    let low = scenario(0.3);
    let unhedged = hedge::simulate(&low, Strategy::Unhedged);
    let hedged = hedge::simulate(&low, fixed);
    assert!(
        hedged.quantile(0.99) < unhedged.quantile(0.99).mul_f64(0.7),
        "{:?} vs {:?}",
        hedged.quantile(0.99),
        unhedged.quantile(0.99)
    );
    assert!(
        hedged.requests_per_call < 1.08,
        "{}",
        hedged.requests_per_call
    );

    let high = scenario(0.9);
    let unhedged = hedge::simulate(&high, Strategy::Unhedged);
    let runaway = hedge::simulate(&high, fixed);
    let safe = hedge::simulate(&high, budgeted);
    assert!(
        runaway.requests_per_call > 1.5,
        "{}",
        runaway.requests_per_call
    );
    assert!(runaway.quantile(0.99) > unhedged.quantile(0.99));
    assert!(safe.requests_per_call < 1.06, "{}", safe.requests_per_call);
    assert!(
        safe.quantile(0.99) <= unhedged.quantile(0.99).mul_f64(1.05),
        "{:?} vs {:?}",
        safe.quantile(0.99),
        unhedged.quantile(0.99)
    );
}

/// The fleet simulation (`reattempt_bench::sim::fleet`, BENCHMARKS.md "At fleet scale") at
/// 2,000 instances through a 30 s outage, 20 s of it after.
fn fleet_outage(fleet: fleet::Fleet, fault: fleet::Fault, guard: fleet::Guard) -> fleet::Summary {
    let scenario = fleet::Scenario {
        after: Duration::from_secs(20),
        ..fleet::Scenario::standard(fleet, fault)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(fleet::simulate(&scenario, guard))
}

#[test]
fn at_2000_instances_the_fleet_settings_bound_an_outage_and_recover_within_10_s() {
    use fleet::{Fault, Fleet, Guard};
    let n = Fleet::Uniform(2000);
    for guard in [Guard::Ratio(0.0), Guard::AwsFleet, Guard::ThrottleRatio] {
        let s = fleet_outage(n, Fault::Outage, guard);
        assert!(s.attempts_per_request <= 1.3, "{guard:?}: {s:?}");
        assert!(
            s.recovery.is_some_and(|r| r <= Duration::from_secs(10)),
            "{guard:?}: {s:?}"
        );
    }
    // The per-instance reserves of the sources' presets add up: 2,000 × 100 retries.
    let aws = fleet_outage(n, Fault::Outage, Guard::AwsStandard);
    assert!(aws.attempts_per_request > 2.5, "{aws:?}");
}

#[test]
fn the_default_throttle_forgets_an_outage_the_books_does_not() {
    use fleet::{Fault, Fleet, Guard};
    let n = Fleet::Uniform(200);
    let default = fleet_outage(n, Fault::Outage, Guard::Throttle);
    let book = fleet_outage(n, Fault::Outage, Guard::ThrottleBook(120));
    assert!(
        default
            .recovery
            .is_some_and(|r| r <= Duration::from_secs(10)),
        "{default:?}"
    );
    assert!(book.recovery.is_none(), "{book:?}");
    // The same shedding during the outage (the probes add one attempt a tick per instance).
    assert!(
        (default.attempts_per_request - book.attempts_per_request).abs() < 0.05,
        "{default:?} {book:?}"
    );
}

#[test]
fn a_zone_fault_shuts_healthy_instances_out_of_a_shared_throttle_not_out_of_their_own() {
    use fleet::{Fault, Fleet, Guard};
    let n = Fleet::Uniform(200);
    let own = fleet_outage(n, Fault::Zone, Guard::Throttle);
    let shared = fleet_outage(n, Fault::Zone, Guard::SharedThrottle);
    assert!(own.ok_healthy > 0.99, "{own:?}");
    assert!(shared.ok_healthy < 0.8, "{shared:?}");
}
