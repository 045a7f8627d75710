//! Loom models of the shared guards' concurrent paths: every interleaving of a few threads (within
//! loom's preemption bound) is run, with the guards' atomics and mutex taken from loom.
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p retry-runtime --release --test loom`
//!
//! Time does not pass in a model unless it says so: under `--cfg loom` the guards read a clock
//! that only `retry_runtime::sync::clock::advance` moves (per OS thread, and loom runs a model's
//! threads on one).
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use retry_runtime::sync::clock;
use retry_runtime::{BreakerState, CircuitBreaker, RetryBudget};

/// Runs `f` under loom with a preemption bound, from a fresh clock each time.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        clock::reset();
        f();
    });
}

fn consecutive(threshold: u32, probes: u32) -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(threshold)
        .reset_timeout(Duration::from_secs(1))
        .half_open_probes(probes)
        .build()
        .unwrap()
}

/// Opens `b` (threshold 1) and lets `reset_timeout` pass: the next acquire enters half-open.
fn due_for_probes(b: &CircuitBreaker) {
    b.record(b.try_acquire().unwrap(), false);
    assert_eq!(b.state(), BreakerState::Open);
    clock::advance(Duration::from_secs(1));
}

#[test]
fn half_open_admits_exactly_the_probes_among_concurrent_callers() {
    model(|| {
        let b = Arc::new(consecutive(1, 2));
        due_for_probes(&b);
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.try_acquire().is_ok())
            })
            .collect();
        let admitted = callers
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert_eq!(admitted, 2);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire().is_err());
    });
}

#[test]
fn probes_recorded_at_once_close_the_breaker_once() {
    model(|| {
        let b = Arc::new(consecutive(1, 2));
        due_for_probes(&b);
        let probes = [b.try_acquire().unwrap(), b.try_acquire().unwrap()];
        let recorders: Vec<_> = probes
            .into_iter()
            .map(|p| {
                let b = b.clone();
                thread::spawn(move || b.record(p, true))
            })
            .collect();
        for h in recorders {
            h.join().unwrap();
        }
        assert_eq!(b.state(), BreakerState::Closed);
        // Closed afresh: one failure opens it again (the count starts at 0, not lost).
        b.record(b.try_acquire().unwrap(), false);
        assert_eq!(b.state(), BreakerState::Open);
    });
}

#[test]
fn a_failure_that_trips_is_not_lost_to_a_concurrent_success() {
    model(|| {
        let b = Arc::new(consecutive(1, 1));
        let (fails, succeeds) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
        let f = {
            let b = b.clone();
            thread::spawn(move || b.record(fails, false))
        };
        let s = {
            let b = b.clone();
            thread::spawn(move || b.record(succeeds, true))
        };
        f.join().unwrap();
        s.join().unwrap();
        // Either order trips: a success before the failure does not undo it, one after is from
        // before the transition.
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.try_acquire().is_err());
    });
}

#[test]
fn consecutive_counts_stay_consistent_under_concurrent_outcomes() {
    model(|| {
        let b = Arc::new(consecutive(2, 1));
        let permits = [
            b.try_acquire().unwrap(),
            b.try_acquire().unwrap(),
            b.try_acquire().unwrap(),
        ];
        // One failure before, then a failure and a success at once.
        b.record(permits[0], false);
        let f = {
            let b = b.clone();
            let p = permits[1];
            thread::spawn(move || b.record(p, false))
        };
        let s = {
            let b = b.clone();
            let p = permits[2];
            thread::spawn(move || b.record(p, true))
        };
        f.join().unwrap();
        s.join().unwrap();
        match b.state() {
            // fail, fail: open (the success came after the transition and was ignored).
            BreakerState::Open => {}
            // fail, success, fail: one failure in a row, so one more opens it.
            BreakerState::Closed => {
                b.record(b.try_acquire().unwrap(), false);
                assert_eq!(b.state(), BreakerState::Open);
            }
            BreakerState::HalfOpen => panic!("no time passed"),
        }
    });
}

#[test]
fn two_failures_at_once_both_count() {
    model(|| {
        let b = Arc::new(consecutive(2, 1));
        let permits = [b.try_acquire().unwrap(), b.try_acquire().unwrap()];
        let threads: Vec<_> = permits
            .into_iter()
            .map(|p| {
                let b = b.clone();
                thread::spawn(move || b.record(p, false))
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(b.state(), BreakerState::Open);
    });
}

#[test]
fn the_rate_mode_judges_the_window_after_concurrent_outcomes() {
    model(|| {
        // Opens at half of 2 calls failed: whichever of the two lands last must see both.
        let b = Arc::new(
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .sliding_window(2)
                .minimum_calls(2)
                .build()
                .unwrap(),
        );
        let threads: Vec<_> = [false, true]
            .into_iter()
            .map(|ok| {
                let b = b.clone();
                thread::spawn(move || {
                    let p = b.try_acquire().unwrap();
                    b.record(p, ok);
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(b.state(), BreakerState::Open);
    });
}

#[test]
fn the_rate_mode_count_follows_the_window_when_calls_race_for_a_slot() {
    model(|| {
        // A window of one slot: two outcomes race for it; the count must match what it holds.
        let b = Arc::new(
            CircuitBreaker::builder()
                .failure_rate(1.0)
                .sliding_window(1)
                .build()
                .unwrap(),
        );
        let first = b.try_acquire().unwrap();
        b.record(first, true);
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let p = b.try_acquire().unwrap();
                    b.record(p, true);
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(b.state(), BreakerState::Closed, "successes only");
        // The window holds one success: a failure now fills it with failures alone.
        b.record(b.try_acquire().unwrap(), false);
        assert_eq!(b.state(), BreakerState::Open);
    });
}

#[test]
fn concurrent_withdrawals_never_overdraw_the_budget() {
    model(|| {
        // Room for two retries; three threads ask.
        let budget = Arc::new(
            RetryBudget::builder()
                .max_tokens(10)
                .retry_cost(5)
                .build()
                .unwrap(),
        );
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let budget = budget.clone();
                thread::spawn(move || budget.try_withdraw(false))
            })
            .collect();
        let granted = threads
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert_eq!(granted, 2);
        assert_eq!(budget.available(), 0);
    });
}

#[test]
fn concurrent_refunds_and_deposits_never_exceed_max_tokens() {
    model(|| {
        let budget = Arc::new(
            RetryBudget::builder()
                .max_tokens(10)
                .retry_cost(5)
                .success_deposit(3)
                .build()
                .unwrap(),
        );
        assert!(budget.try_withdraw(false));
        let refund = {
            let budget = budget.clone();
            thread::spawn(move || budget.refund(false))
        };
        let deposit = {
            let budget = budget.clone();
            thread::spawn(move || budget.deposit())
        };
        let withdraw = {
            let budget = budget.clone();
            thread::spawn(move || budget.try_withdraw(false))
        };
        refund.join().unwrap();
        deposit.join().unwrap();
        let took = withdraw.join().unwrap();
        let left = budget.available();
        assert!(left <= 10, "{left}");
        assert!(took, "5 tokens were there at every point");
    });
}

#[test]
fn a_bulkhead_admits_exactly_max_concurrent_and_every_slot_comes_back() {
    use retry_runtime::Bulkhead;
    model(|| {
        let b = Arc::new(Bulkhead::builder().max_concurrent(2).build().unwrap());
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let permit = b.try_acquire();
                    let admitted = permit.is_ok();
                    assert!(b.in_flight() <= 2);
                    drop(permit);
                    admitted
                })
            })
            .collect();
        let admitted = callers
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert!(admitted >= 2, "a slot freed may be taken again: {admitted}");
        assert_eq!(b.in_flight(), 0);
    });
}

#[test]
fn a_bulkhead_never_admits_past_max_while_slots_are_held() {
    use retry_runtime::Bulkhead;
    model(|| {
        let b = Arc::new(Bulkhead::builder().max_concurrent(1).build().unwrap());
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                // The permits are leaked into the result: held to the end of the model.
                thread::spawn(move || b.try_acquire().map(std::mem::forget).is_ok())
            })
            .collect();
        let admitted = callers
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert_eq!(admitted, 1);
        assert_eq!(b.in_flight(), 1);
    });
}

/// As [`model`], for the throttle: each request reads all of its 96 bucket words, which loom
/// counts as branches, so the bound on branches is raised and preemptions kept to two.
fn throttle_model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.max_branches = 20_000;
    builder.check(move || {
        clock::reset();
        f();
    });
}

/// A throttle whose window holds ten accepted requests: nothing is shed (no random draw).
fn warm_throttle() -> retry_runtime::AdaptiveThrottle {
    let t = retry_runtime::AdaptiveThrottle::builder()
        .window(Duration::from_secs(20))
        .build()
        .unwrap();
    for _ in 0..10 {
        t.try_acquire().unwrap();
        t.record(true);
    }
    t
}

/// Two threads at once through `t`: each is admitted and records a success.
fn two_admitted_successes(t: &Arc<retry_runtime::AdaptiveThrottle>) {
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            thread::spawn(move || {
                t.try_acquire().unwrap();
                t.record(true);
            })
        })
        .collect();
    for h in callers {
        h.join().unwrap();
    }
}

#[test]
fn concurrent_throttle_outcomes_are_all_counted() {
    throttle_model(|| {
        let t = Arc::new(warm_throttle());
        two_admitted_successes(&t);
        assert_eq!(t.counts(), (12, 12));
    });
}

#[test]
fn a_stale_throttle_bucket_is_restarted_once_by_racing_writers() {
    throttle_model(|| {
        let t = Arc::new(warm_throttle());
        clock::advance(Duration::from_secs(1));
        for _ in 0..10 {
            t.try_acquire().unwrap();
            t.record(true);
        }
        // A whole window after the first ten: the bucket the writers land in still holds them
        // (stale), the next one holds the second ten (in the window: nothing is shed).
        clock::advance(Duration::from_secs(19));
        assert_eq!(t.counts(), (10, 10));
        two_admitted_successes(&t);
        assert_eq!(t.counts(), (12, 12), "no increment lost to the restart");
    });
}

#[test]
fn racing_writers_at_a_full_throttle_bucket_lose_no_count() {
    throttle_model(|| {
        // 32 requests a window: one per bucket. Each writer finds the head full and ends it.
        let t = Arc::new(
            retry_runtime::AdaptiveThrottle::builder()
                .window(Duration::from_secs(20))
                .window_requests(32)
                .build()
                .unwrap(),
        );
        t.try_acquire().unwrap();
        t.record(true);
        two_admitted_successes(&t);
        // Whichever buckets the two landed in (one new bucket, or two), all three are counted.
        assert_eq!(t.counts(), (3, 3));
    });
}

#[test]
fn throttle_slots_reused_a_window_later_count_only_the_last_32_buckets() {
    throttle_model(|| {
        // One request a bucket: 33 requests reuse the first slot for a bucket a window newer.
        let t = Arc::new(
            retry_runtime::AdaptiveThrottle::builder()
                .window(Duration::from_secs(20))
                .window_requests(32)
                .build()
                .unwrap(),
        );
        for _ in 0..32 {
            let _ = t.try_acquire();
            t.record(true);
        }
        let a = {
            let t = t.clone();
            thread::spawn(move || {
                let _ = t.try_acquire();
                t.record(true);
            })
        };
        let _ = t.try_acquire();
        t.record(true);
        a.join().unwrap();
        // 34 requests and 34 accepts, about one a bucket (two racing writers may share one);
        // the window holds the last 32 buckets, whose slots held the first ones.
        let (requests, accepts) = t.counts();
        assert!((31..=33).contains(&requests), "{requests}");
        assert!((31..=33).contains(&accepts), "{accepts}");
    });
}
