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

#[test]
fn the_state_word_keeps_its_parts_apart() {
    // Every part at its largest: none spills into another.
    let word = with_low(pack(EPOCH_MASK, CLOSED), COUNT) | FULL;
    assert_eq!(
        (epoch(word), phase(word), low(word)),
        (EPOCH_MASK, CLOSED, COUNT)
    );
    assert_eq!(Permit::closed(word).word, pack(EPOCH_MASK, CLOSED));
    assert_eq!(low(with_low(word, 1)), 1);
    assert_eq!(with_low(word, 1) & !LOW, word & !LOW);
    // A closed permit is the closed word with nothing counted; a rate-mode word (`low` ≥ 1)
    // never equals one.
    assert_eq!(Permit::closed(pack(5, CLOSED)).word, pack(5, CLOSED));
    assert_ne!(
        with_low(pack(5, CLOSED), 1),
        Permit::closed(pack(5, CLOSED)).word
    );
    let probe = Permit {
        word: pack(EPOCH_MASK, HALF_OPEN) | (PROBE_MAX << PROBE_SHIFT),
    };
    assert_eq!(
        (probe.probe(), probe.epoch(), phase(probe.word)),
        (PROBE_MAX, EPOCH_MASK, HALF_OPEN)
    );
    assert!(probe.is_permit());
    assert!(!Permit::REJECTED.is_permit() && !Permit::NOT_ASKED.is_permit());
    assert_ne!(Permit::REJECTED, Permit::NOT_ASKED);
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
    assert!(b.try_acquire().is_err(), "the new probe holds the slot");
    b.record(lost, true); // late, but the breaker is still half-open: it counts
    assert_eq!(b.state(), BreakerState::Closed);
    b.record(probe, false); // from before the transition: ignored
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
    // take the first probe there, then race eight threads for the other two (reading the
    // clock outside the runtime is fine: half-open was entered inside it). Outside the
    // runtime the clock is the real one, which must not reach the first probe's expiry
    // (`reset_timeout` after it was taken) while the threads run: an hour, not a second,
    // so that a slow machine (or Miri, a thousand times slower) frees no probe slot.
    let hour = Duration::from_secs(3600);
    let b = runtime.block_on(async {
        let b = CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(hour)
            .half_open_probes(3)
            .build()
            .unwrap();
        fail(&b);
        tokio::time::sleep(hour).await;
        assert_eq!(b.state(), BreakerState::HalfOpen);
        // Reading the state changes nothing; the first probe enters half-open.
        let _first = b.try_acquire().unwrap();
        b
    });
    let admitted = std::sync::atomic::AtomicU32::new(1);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                // Fewer rounds under Miri, which runs this a thousand times slower.
                for _ in 0..if cfg!(miri) { 20 } else { 1000 } {
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

/// The state word at its extremes: the epoch wrapping after 2^29 transitions (in both modes), a
/// count at `u32::MAX`, probe numbers wrapping at 2^33.
mod extremes {
    use super::*;

    fn at(b: &CircuitBreaker, word: u64) {
        b.state.store(word, Ordering::SeqCst);
    }

    #[tokio::test(start_paused = true)]
    async fn epoch_wraps_in_consecutive_mode() {
        let b = CircuitBreaker::builder()
            .failure_threshold(2)
            .reset_timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        at(&b, pack(EPOCH_MASK, CLOSED));
        let old = b.try_acquire().unwrap();
        fail(&b);
        fail(&b);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(epoch(b.state.load(Ordering::SeqCst)), 0);
        // An old-epoch permit: ignored (success or failure).
        b.record(old, true);
        b.record(old, false);
        assert_eq!(b.state(), BreakerState::Open);
        tokio::time::advance(Duration::from_secs(1)).await;
        let probe = b.try_acquire().unwrap();
        assert_eq!(probe.epoch(), 1);
        b.record(old, true);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.record(probe, true);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.state.load(Ordering::SeqCst), pack(2, CLOSED));
        // A count at u32::MAX saturates and stays closed-phase consistent.
        let b = CircuitBreaker::builder()
            .failure_threshold(u32::MAX)
            .build()
            .unwrap();
        at(&b, with_low(pack(EPOCH_MASK, CLOSED), COUNT - 1));
        let p = b.try_acquire().unwrap();
        assert_eq!(p.word, pack(EPOCH_MASK, CLOSED));
        b.record(p, false);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.state.load(Ordering::SeqCst), pack(0, OPEN));
    }

    #[tokio::test(start_paused = true)]
    async fn epoch_wraps_in_rate_mode() {
        let b = CircuitBreaker::builder()
            .failure_rate(0.5)
            .sliding_window(4)
            .minimum_calls(4)
            .reset_timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let Trip::Rate { outcomes, .. } = &b.trip else {
            panic!()
        };
        outcomes.failures.store(EPOCH_MASK << 32, Ordering::SeqCst);
        at(&b, with_low(pack(EPOCH_MASK, CLOSED), 1));
        let old = b.try_acquire().unwrap();
        for _ in 0..4 {
            fail(&b);
        }
        assert_eq!(b.state(), BreakerState::Open);
        b.record(old, false);
        tokio::time::advance(Duration::from_secs(1)).await;
        let probe = b.try_acquire().unwrap();
        b.record(probe, true);
        assert_eq!(b.state(), BreakerState::Closed);
        // After the wrap, the window counts afresh: 2 of 4 trip, 1 of 4 does not.
        succeed(&b);
        succeed(&b);
        succeed(&b);
        fail(&b);
        assert_eq!(b.state(), BreakerState::Closed);
        fail(&b);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn probe_numbers_wrap() {
        let b = CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(Duration::from_secs(1))
            .half_open_probes(3)
            .build()
            .unwrap();
        fail(&b);
        tokio::time::advance(Duration::from_secs(1)).await;
        let p1 = b.try_acquire().unwrap();
        b.lock().last_probe = PROBE_MAX - 1;
        let p2 = b.try_acquire().unwrap();
        let p3 = b.try_acquire().unwrap();
        assert_eq!((p2.probe(), p3.probe()), (PROBE_MAX, 2));
        assert!(b.try_acquire().is_err());
        b.record(p2, true);
        b.record(p3, true);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.record(p1, true);
        assert_eq!(b.state(), BreakerState::Closed);
    }
}
