use std::time::Duration;

use proptest::prelude::Strategy as _;
use tokio::time::Instant;

use super::adaptive::AdaptiveThrottle;
use super::buckets::*;
use crate::sync::Ordering;

const K_DEFAULT: f64 = 2.0;

#[test]
fn the_probability_is_the_books_formula() {
    assert_eq!(probability(0, 0, 2.0), 0.0);
    assert_eq!(probability(100, 50, 2.0), 0.0);
    assert!((probability(100, 25, 2.0) - 50.0 / 101.0).abs() < 1e-12);
    assert!((probability(99, 0, 2.0) - 0.99).abs() < 1e-12);
    assert!((probability(100, 25, 1.0) - 75.0 / 101.0).abs() < 1e-12);
}

#[tokio::test(start_paused = true)]
async fn counts_age_out_of_the_window() {
    // The window alone: its first accept would forget the refusals before it.
    let t = AdaptiveThrottle::builder()
        .window(Duration::from_secs(20))
        .forget_outage(false)
        .build()
        .unwrap();
    for _ in 0..10 {
        let _ = t.try_acquire();
    }
    assert_eq!(t.counts(), (10, 0));
    tokio::time::advance(Duration::from_secs(10)).await;
    let _ = t.try_acquire();
    t.record(true);
    assert_eq!(t.counts(), (11, 1));
    tokio::time::advance(Duration::from_secs(11)).await;
    assert_eq!(t.counts(), (1, 1), "the first ten are over 20 s old");
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(t.counts(), (0, 0));
    assert_eq!(t.rejection_probability(), 0.0);
}

#[tokio::test(start_paused = true)]
async fn what_is_sent_converges_to_k_times_what_is_accepted() {
    crate::seed_rng(17);
    let t = AdaptiveThrottle::builder().k(2.0).build().unwrap();
    // The dependency can take one request per round of ten tries; it refuses the others.
    let (mut sent, mut accepted) = (0u32, 0u32);
    for round in 0..2_000u32 {
        let mut taken = false;
        for _ in 0..10 {
            if t.try_acquire().is_ok() {
                sent += 1;
                let ok = !taken;
                taken = true;
                accepted += u32::from(ok);
                t.record(ok);
            }
        }
        let _ = round;
    }
    // Sent ≈ K × accepted (a round in which all ten are shed serves nobody).
    let ratio = f64::from(sent) / f64::from(accepted);
    assert!(
        (1.8..2.3).contains(&ratio),
        "sent {sent}, accepted {accepted}"
    );
    assert!(
        (2_500..4_600).contains(&sent),
        "sent {sent} of 20000: most tries are shed"
    );
}

/// Drives `t` for `secs` seconds at `rate` requests per second (paused clock), the
/// dependency accepting `capacity` a second, evenly (a bucket of at most five).
async fn drive(t: &AdaptiveThrottle, secs: u32, rate: u32, capacity: u32) {
    let gap = Duration::from_secs(1) / rate;
    let mut credit = 0.0;
    for _ in 0..secs * rate {
        credit = (credit + f64::from(capacity) / f64::from(rate)).min(5.0);
        if t.try_acquire().is_ok() {
            let accepted = credit >= 1.0;
            if accepted {
                credit -= 1.0;
            }
            t.record(accepted);
        }
        tokio::time::advance(gap).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_busy_default_throttle_starts_shedding_within_a_second_of_an_overload() {
    crate::seed_rng(17);
    let t = AdaptiveThrottle::builder().build().unwrap();
    // A minute of 2000 requests/s, all accepted; then the dependency takes 500 a second.
    drive(&t, 60, 2000, 2000).await;
    assert_eq!(t.rejection_probability(), 0.0);
    drive(&t, 1, 2000, 500).await;
    // What is sent converges to 2 × 500 of the 2000: about half is shed.
    let p = t.rejection_probability();
    assert!(p > 0.3, "still {p} a second into the overload");
}

#[tokio::test(start_paused = true)]
async fn a_busy_default_throttle_stops_shedding_within_a_second_of_the_end() {
    crate::seed_rng(17);
    let t = AdaptiveThrottle::builder().build().unwrap();
    drive(&t, 60, 2000, 500).await;
    assert!(t.rejection_probability() > 0.3);
    // The dependency takes everything again.
    drive(&t, 1, 2000, 2000).await;
    let p = t.rejection_probability();
    assert_eq!(p, 0.0, "still shedding a second after the overload");
}

/// `secs` seconds of `rate` requests a second, every one the throttle lets through refused.
async fn outage(t: &AdaptiveThrottle, secs: u32, rate: u32) {
    drive(t, secs, rate, 0).await;
}

/// A minute of `rate` requests a second, all accepted; 30 s of outage; then 5 s of the dependency taking everything. The rejection probability at the
/// outage's end, then 5 s after it.
async fn outage_and_back(forget: bool, rate: u32) -> (f64, f64) {
    let t = AdaptiveThrottle::builder()
        .forget_outage(forget)
        .build()
        .unwrap();
    drive(&t, 60, rate, rate).await;
    // At one request a second, the outage's retries (three tries a request) are what fill
    // the window; at ten or more a second, rejected requests are not retried.
    outage(&t, 30, if rate == 1 { 3 } else { rate }).await;
    // The book's formula during the outage: nothing is forgotten while nothing is accepted.
    let (requests, accepts) = t.counts();
    let during = t.rejection_probability();
    assert_eq!(during, probability(requests, accepts, K_DEFAULT));
    drive(&t, 5, rate, rate).await;
    (during, t.rejection_probability())
}

#[tokio::test(start_paused = true)]
async fn the_first_accept_after_an_outage_forgets_it() {
    for rate in [1, 10, 200] {
        crate::seed_rng(17);
        let (during, after) = outage_and_back(true, rate).await;
        crate::seed_rng(17);
        let (book_during, book_after) = outage_and_back(false, rate).await;
        assert!(during > 0.1, "{rate}/s: the outage is shed ({during})");
        assert_eq!(
            during, book_during,
            "{rate}/s: as the book's throttle sheds it"
        );
        assert_eq!(after, 0.0, "{rate}/s: still shedding 5 s after the outage");
        assert!(
            book_after > 0.1,
            "{rate}/s: the book's throttle sheds on ({book_after})"
        );
    }
}

/// Forgetting takes refusals away, never a request let through and not yet answered: with
/// one request a bucket, an accept lands in the bucket after its request's, and the first
/// accept of a throttle (which forgets everything before it) must still leave that
/// request counted (it was forgotten once, and the accept then outnumbered its requests).
#[test]
fn forgetting_never_takes_a_request_that_was_let_through() {
    let t = AdaptiveThrottle::builder()
        .window(Duration::from_secs(20))
        .window_requests(32)
        .build()
        .unwrap();
    // Two requests let through; the first is answered while the second is in flight.
    t.try_acquire().unwrap();
    t.try_acquire().unwrap();
    t.record(true);
    t.record(false);
    assert_eq!(t.counts(), (2, 1), "both requests counted, one accept");
    t.try_acquire().unwrap();
    t.record(true);
    assert_eq!(
        t.counts(),
        (3, 2),
        "an accept after a refusal forgets nothing it should not"
    );
}

/// A dependency that accepts one request in twenty, at `rate` requests a second for
/// `secs`, after a minute of health: what was sent and accepted.
async fn flapping(t: &AdaptiveThrottle, rate: u32, secs: u32) -> (u32, u32) {
    let gap = Duration::from_secs(1) / rate;
    for _ in 0..60 * rate {
        t.try_acquire().unwrap();
        t.record(true);
        tokio::time::advance(gap).await;
    }
    let (mut sent, mut accepted) = (0, 0);
    for _ in 0..secs * rate {
        if t.try_acquire().is_ok() {
            sent += 1;
            let ok = sent % 20 == 0;
            accepted += u32::from(ok);
            t.record(ok);
        }
        tokio::time::advance(gap).await;
    }
    (sent, accepted)
}

/// The SRE bound during a partial outage (from a hostile review): what reaches a
/// dependency that accepts 5 % stays near what the book's throttle sends, plus the probes
/// (one a tick). A lone accept every few seconds forgot the window each time: 376 of 600
/// sent at 1/s where the book sent 105.
#[tokio::test(start_paused = true)]
async fn a_dependency_that_accepts_now_and_then_keeps_the_sre_bound() {
    for rate in [1, 3, 10] {
        crate::seed_rng(42);
        let forgetting = AdaptiveThrottle::builder().build().unwrap();
        let (sent, _) = flapping(&forgetting, rate, 600).await;
        crate::seed_rng(42);
        let book = AdaptiveThrottle::builder()
            .forget_outage(false)
            .build()
            .unwrap();
        let (book_sent, _) = flapping(&book, rate, 600).await;
        // One probe a tick (3.75 s), and what the formula lets through for the probes' own
        // accepts (one in twenty, each worth K = 2 requests).
        let probes = 600 * 4 / 15;
        let bound = book_sent + probes + 2 * probes / 20;
        assert!(
            sent <= bound,
            "{rate}/s: {sent} sent to a dependency accepting 5 %, the book {book_sent}, bound {bound}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_throttle_that_sheds_everything_probes_once_a_tick() {
    // 1 s ticks; a window full of refusals: the formula lets about 1 in 500 through.
    let admitted = |forget: bool| async move {
        crate::seed_rng(17);
        let t = AdaptiveThrottle::builder()
            .window(Duration::from_secs(32))
            .forget_outage(forget)
            .build()
            .unwrap();
        outage(&t, 5, 200).await;
        assert!(t.rejection_probability() > 0.99);
        // Ten seconds of 100 requests a second, every one let through refused.
        let mut admitted = 0;
        for _ in 0..1000 {
            if t.try_acquire().is_ok() {
                admitted += 1;
                t.record(false);
            }
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        admitted
    };
    let probing = admitted(true).await;
    let book = admitted(false).await;
    assert!(book < 10, "{book}");
    assert!(
        (10..=10 + book + 2).contains(&probing),
        "one probe a tick: {probing} (the formula's own: {book})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_steady_overload_is_not_forgotten() {
    // Four requests a second against a dependency that takes one: accepts keep coming, so
    // the throttle with forgetting sheds as the book's does.
    crate::seed_rng(17);
    let [forgets, book] = [true, false].map(|forget| {
        AdaptiveThrottle::builder()
            .forget_outage(forget)
            .build()
            .unwrap()
    });
    drive(&forgets, 300, 4, 1).await;
    let (counts, p) = (forgets.counts(), forgets.rejection_probability());
    crate::seed_rng(17);
    drive(&book, 300, 4, 1).await;
    let book_p = book.rejection_probability();
    assert!(p > 0.3, "{p}");
    assert!(
        (p - book_p).abs() < 0.05,
        "{counts:?} {p} against {:?} {book_p}",
        book.counts()
    );
}

/// Counts a request as `try_acquire` does, for a thread that read the clock at `tick`.
fn acquire_at(t: &AdaptiveThrottle, tick: u64) {
    let (head, _) = t.current(tick);
    bump(&t.requests[slot(head)], head);
}

#[tokio::test(start_paused = true)]
async fn a_clock_read_just_before_a_bucket_began_does_not_end_it() {
    // Many threads at a tick's end: one reads the clock in tick 0 and reaches the throttle
    // after another, which read it in tick 1, started tick 1's bucket. A 32 s window: every
    // request below is less than 2 s old, all must stay counted.
    let t = AdaptiveThrottle::builder()
        .window(Duration::from_secs(32))
        .window_requests(u32::MAX)
        .build()
        .unwrap();
    let _ = t.try_acquire();
    tokio::time::advance(Duration::from_secs(1)).await;
    for _ in 0..40 {
        acquire_at(&t, 1);
        acquire_at(&t, 0);
    }
    assert_eq!(
        t.counts(),
        (81, 0),
        "the window lost buckets to stale clock readings"
    );
    // And a thread whose reading is behind sees the whole window (tick 1's bucket included).
    let (head, tick) = t.current(0);
    assert_eq!(t.totals(head, tick), (81, 0));
}

#[tokio::test(start_paused = true)]
async fn counts_stay_out_of_the_window_after_an_idle_spell_of_2_pow_32_ticks() {
    // A 20 ms window: 625 µs ticks; 2^32 of them are 31 days.
    let t = AdaptiveThrottle::builder()
        .window(Duration::from_millis(20))
        .build()
        .unwrap();
    for _ in 0..10 {
        let _ = t.try_acquire();
    }
    tokio::time::advance(
        Duration::from_nanos(t.bucket) * u32::MAX + Duration::from_nanos(t.bucket),
    )
    .await;
    assert_eq!(t.counts(), (0, 0), "31 days old");
    let _ = t.try_acquire();
    assert_eq!(t.counts(), (1, 0), "31 days old");
}

#[tokio::test(start_paused = true)]
async fn a_bucket_starter_descheduled_before_writing_its_tick_does_not_unbound_the_window() {
    let t = AdaptiveThrottle::builder()
        .window(Duration::from_secs(60))
        .build()
        .unwrap();
    for _ in 0..16 {
        let _ = t.try_acquire();
    }
    // A thread ends the full bucket 0 (its compare-and-swap of the head) and is descheduled
    // before it writes bucket 1's tick; the others go on.
    t.head.fetch_add(1, Ordering::AcqRel);
    for _ in 0..2_000 {
        let _ = t.try_acquire();
    }
    let (requests, _) = t.counts();
    assert!(
        requests <= t.window_requests() + 16,
        "{requests} requests in a window of {}",
        t.window_requests()
    );
    // The starter wakes up: what it writes late leaves the newer buckets alone.
    t.start(1, 0);
    assert_eq!(t.counts(), (requests, 0));
}

#[tokio::test(start_paused = true)]
async fn a_helper_with_a_stale_reading_does_not_date_the_new_bucket_back() {
    // 10 ms ticks.
    let t = AdaptiveThrottle::builder()
        .window(Duration::from_millis(320))
        .window_requests(u32::MAX)
        .build()
        .unwrap();
    let _ = t.try_acquire();
    // Thread A reads the clock in tick 0 ...
    let stale = t.tick();
    tokio::time::advance(Duration::from_millis(10)).await;
    // ... thread B reads it in tick 1, ends bucket 0 (its compare-and-swap of the head) and
    // is descheduled before it writes bucket 1's tick; A finds it unwritten and writes its
    // own (stale) reading.
    let fresh = t.tick();
    t.head.fetch_add(1, Ordering::AcqRel);
    assert_eq!(t.current(stale).0, 1);
    // B wakes up, writes its tick and counts its request in bucket 1, at tick 1.
    t.start(1, fresh);
    bump(&t.requests[slot(1)], 1);
    // 31 ticks later B's request is 31 ticks old: still in the window.
    tokio::time::advance(Duration::from_millis(310)).await;
    assert_eq!(
        t.counts(),
        (1, 0),
        "bucket 1 dated back to a stale reading left the window a tick early"
    );
}

#[tokio::test(start_paused = true)]
async fn a_quiet_client_keeps_the_whole_time_window() {
    let t = AdaptiveThrottle::builder().build().unwrap();
    // Two requests a second for a minute: far fewer than the window's request bound.
    for _ in 0..120 {
        let _ = t.try_acquire();
        tokio::time::advance(Duration::from_millis(500)).await;
    }
    assert_eq!(t.counts(), (120, 0));
}

/// What the throttle is asked or told, and the clock moving on.
#[derive(Debug, Clone, Copy)]
enum Op {
    Acquire,
    Record(bool),
    Advance(u64),
    Counts,
}

/// The window as specified, one bucket after another in a list: a bucket ends when its
/// tick is over or it holds `per_bucket` requests; the window is the last 32 buckets, less
/// those started 32 ticks ago or more. Bucket 0 starts at tick 0, the first use.
struct Model {
    tick_ns: u64,
    per_bucket: u64,
    /// (tick it started in, requests, accepts), oldest first.
    buckets: Vec<(u64, u64, u64)>,
}

impl Model {
    fn current(&mut self, tick: u64) -> &mut (u64, u64, u64) {
        let (started, requests, _) = *self.buckets.last().unwrap();
        if started != tick || requests >= self.per_bucket {
            self.buckets.push((tick, 0, 0));
        }
        self.buckets.last_mut().unwrap()
    }

    fn counts(&self, tick: u64) -> (u64, u64) {
        self.buckets
            .iter()
            .rev()
            .take(BUCKETS)
            .filter(|b| tick - b.0 < BUCKETS as u64)
            .fold((0, 0), |(r, a), b| (r + b.1, a + b.2))
    }
}

proptest::proptest! {
    /// After every step of a random sequence of requests, answers and waits, the throttle
    /// counts what the list model of its window counts, never more than its request bound,
    /// and its probability is the book's formula over those counts.
    #[test]
    fn the_window_counts_what_its_model_counts(
        window_ms in 20..=2_000u64,
        window_requests in proptest::prop_oneof![1..=300u32, proptest::prelude::Just(u32::MAX)],
        ops in proptest::collection::vec(
            proptest::prop_oneof![
                4 => proptest::prelude::Just(Op::Acquire),
                3 => proptest::prelude::any::<bool>().prop_map(Op::Record),
                2 => (0..=200u64).prop_map(Op::Advance),
                1 => proptest::prelude::Just(Op::Counts),
            ],
            1..600,
        ),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            crate::seed_rng(7);
            // The model is the window as specified; forgetting has its own tests.
            let t = AdaptiveThrottle::builder()
                .window(Duration::from_millis(window_ms))
                .window_requests(window_requests)
                .forget_outage(false)
                .build()
                .unwrap();
            let mut model = Model {
                tick_ns: t.bucket,
                per_bucket: u64::from(t.per_bucket),
                buckets: vec![(0, 0, 0)],
            };
            // The first use starts the throttle's clock.
            assert_eq!(t.counts(), (0, 0));
            let origin = Instant::now();
            let tick_ns = model.tick_ns;
            let tick = || {
                u64::try_from(Instant::now().duration_since(origin).as_nanos()).unwrap()
                    / tick_ns
            };
            for op in ops {
                match op {
                    Op::Acquire => {
                        let now = tick();
                        let _ = t.try_acquire();
                        model.current(now).1 += 1;
                    }
                    Op::Record(accepted) => {
                        let now = tick();
                        t.record(accepted);
                        if accepted {
                            model.current(now).2 += 1;
                        }
                    }
                    Op::Advance(ms) => tokio::time::advance(Duration::from_millis(ms)).await,
                    Op::Counts => {}
                }
                let expected = model.counts(tick());
                proptest::prop_assert_eq!(t.counts(), expected, "after {:?}", op);
                proptest::prop_assert!(expected.0 <= t.window_requests());
                proptest::prop_assert_eq!(
                    t.rejection_probability(),
                    probability(expected.0, expected.1, t.k())
                );
            }
            Ok(())
        })?;
    }
}

#[test]
fn bad_settings_name_their_field() {
    for (b, field) in [
        (AdaptiveThrottle::builder().k(0.5), "k"),
        (AdaptiveThrottle::builder().k(f64::NAN), "k"),
        (AdaptiveThrottle::builder().k(f64::INFINITY), "k"),
        (
            AdaptiveThrottle::builder().window(Duration::from_millis(10)),
            "window",
        ),
    ] {
        assert_eq!(b.build().unwrap_err().field(), field);
    }
}
