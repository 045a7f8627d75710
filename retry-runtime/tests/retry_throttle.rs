//! gRFC A6's retry throttle (`RetryThrottle`): grpc-java's and grpc-go's throttling arithmetic
//! ported (each test cites its source), a proptest model (random failures and successes
//! against an integer model written from A6's text), and threads hammering one throttle.
#![allow(
    clippy::float_cmp,
    reason = "tokens are thousandths over 1000: exactly the nearest f64 to the decimal written"
)]

use std::sync::Barrier;

use proptest::prelude::*;
use retry_runtime::RetryThrottle;

/// grpc-java `core/src/test/java/io/grpc/internal/RetriableStreamTest.java`, `throttle`:
/// `new Throttle(4f, 0.8f)`, step by step with the tokens its comments give.
#[test]
fn grpc_java_retriable_stream_test_throttle() {
    let throttle = RetryThrottle::new(4, 0.8).unwrap();
    assert!(throttle.allows_retry());
    assert!(throttle.record_failure()); // token = 3
    assert!(throttle.allows_retry());
    assert!(!throttle.record_failure()); // token = 2
    assert!(!throttle.allows_retry());
    assert!(!throttle.record_failure()); // token = 1
    assert!(!throttle.record_failure()); // token = 0
    assert!(!throttle.record_failure()); // token = 0
    assert!(!throttle.record_failure()); // token = 0
    assert!(!throttle.allows_retry());
    assert_eq!(throttle.tokens(), 0.0);

    throttle.record_success(); // token = 0.8
    assert!(!throttle.allows_retry());
    throttle.record_success(); // token = 1.6
    assert!(!throttle.allows_retry());
    throttle.record_success(); // token = 2.4 (the Java comment says 3.2)
    assert_eq!(throttle.tokens(), 2.4);
    assert!(throttle.allows_retry());
    throttle.record_success(); // token = 3.2
    assert!(throttle.allows_retry());
    throttle.record_success(); // token = 4
    assert!(throttle.allows_retry());
    throttle.record_success(); // token = 4
    assert_eq!(throttle.tokens(), 4.0);
    assert!(throttle.allows_retry());

    assert!(throttle.allows_retry());
    assert!(throttle.record_failure()); // token = 3
    assert!(throttle.allows_retry());
    assert!(!throttle.record_failure()); // token = 2
    assert!(!throttle.allows_retry());
}

/// grpc-java `RetriableStreamTest.java`, `throttleStream_Succeed`: three failures from other
/// calls (3, 2, 1), then this call's success: 1.8, still not above the threshold.
#[test]
fn grpc_java_retriable_stream_test_throttle_stream_succeed() {
    let throttle = RetryThrottle::new(4, 0.8).unwrap();
    assert!(throttle.record_failure()); // count = 3
    assert!(!throttle.record_failure()); // count = 2
    assert!(!throttle.record_failure()); // count = 1
    throttle.record_success();
    assert!(!throttle.allows_retry()); // count = 1.8
    assert_eq!(throttle.tokens(), 1.8);
}

/// grpc-java `RetriableStreamTest.java`, `hedging_throttledByOtherCall`'s set-up: the throttle is
/// the channel's, so one call's failures stop another's hedges (a clone shares the tokens).
#[test]
fn grpc_java_hedging_throttled_by_other_call() {
    let channel = RetryThrottle::new(4, 0.8).unwrap();
    let other_call = channel.clone();
    assert!(other_call.record_failure()); // 3
    assert!(!other_call.record_failure()); // 2
    assert!(!channel.allows_retry(), "this call may not hedge");
}

/// grpc-go `test/retry_test.go`, `TestRetryThrottling`: `maxTokens` 10, `tokenRatio` 0.5,
/// `maxAttempts` 4, a server that succeeds on its attempts number 0, 3, 6, 10-14, 16 and 18 and
/// answers `UNAVAILABLE` otherwise. Each call here follows A6: an `UNAVAILABLE` takes a token and
/// is retried while the throttle allows it and attempts remain; a success adds 0.5. The table's
/// codes and attempt counts are grpc-go's; the tokens are this model's (three of grpc-go's
/// comments, 6, 5.5 and 4.5, are one token lower than its own arithmetic gives).
#[test]
fn grpc_go_test_retry_throttling() {
    let throttle = RetryThrottle::new(10, 0.5).unwrap();
    let mut i: i32 = -1;
    let mut server = || {
        i += 1;
        matches!(i, 0 | 3 | 6 | 10..=14 | 16 | 18)
    };
    let mut call = || {
        for attempt in 1..=4 {
            if server() {
                throttle.record_success();
                return true;
            }
            let may_retry = throttle.record_failure();
            if !may_retry || attempt == 4 {
                return false;
            }
        }
        unreachable!()
    };
    // (succeeded, attempts made so far − 1 = grpc-go's `i`, tokens after)
    let table = [
        (true, 0, 10.0),
        (true, 3, 8.5),
        (true, 6, 7.0),
        (false, 8, 5.0), // first attempt retried; the second's failure ends it
        (false, 9, 4.0),
        (true, 10, 4.5),
        (true, 11, 5.0),
        (true, 12, 5.5),
        (true, 13, 6.0),
        (true, 14, 6.5),
        (true, 16, 6.0),
        (false, 17, 5.0),
    ];
    let mut seen = Vec::new();
    for _ in &table {
        let ok = call();
        seen.push((ok, throttle.tokens()));
    }
    let want: Vec<_> = table.iter().map(|&(ok, _, tokens)| (ok, tokens)).collect();
    assert_eq!(seen, want);
    assert_eq!(i, table.last().unwrap().1);
}

/// A6's threshold is "less than or equal to maxTokens / 2": exactly half allows nothing, for an
/// odd `maxTokens` too.
#[test]
fn exactly_half_is_throttled() {
    let throttle = RetryThrottle::new(3, 0.5).unwrap();
    assert!(throttle.record_failure(), "2 > 1.5");
    throttle.record_success(); // 2.5
    assert!(!throttle.record_failure(), "1.5 is not above 1.5");
    assert!(!throttle.allows_retry());
    throttle.record_success(); // 2
    assert!(throttle.allows_retry());
}

#[test]
fn one_token_throttle() {
    let throttle = RetryThrottle::new(1, 0.001).unwrap();
    assert!(throttle.allows_retry());
    assert!(!throttle.record_failure());
    for _ in 0..500 {
        throttle.record_success();
    }
    assert!(!throttle.allows_retry(), "0.5 is half: not above");
    throttle.record_success();
    assert!(throttle.allows_retry());
    assert_eq!(throttle.tokens(), 0.501);
}

// ---- Model -------------------------------------------------------------------------------------

/// A6's throttle as its text says it, in thousandths of a token (the ratio's fourth decimal
/// dropped): `token_count` in [0, max], −1 per failure, +ratio per success, retries while
/// `token_count > max / 2`.
#[derive(Debug)]
struct Model {
    tokens: i64,
    max: i64,
    ratio: i64,
}

impl Model {
    fn failure(&mut self) -> bool {
        self.tokens = (self.tokens - 1000).max(0);
        self.allows()
    }

    fn success(&mut self) {
        self.tokens = (self.tokens + self.ratio).min(self.max);
    }

    fn allows(&self) -> bool {
        2 * self.tokens > self.max
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Failure,
    Success,
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![3 => Just(Op::Failure), 3 => Just(Op::Success), 1 => Just(Op::Read)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any throttle, any sequence: every answer and every token count as the model's.
    #[test]
    fn the_throttle_follows_the_model(
        max_tokens in prop_oneof![1_u32..=12, 1_u32..=1000],
        ratio_milli in prop_oneof![1_i64..=2000, 1_i64..=1_000_000],
        sub_milli in 0_u32..1000,
        ops in prop::collection::vec(op(), 0..400),
    ) {
        // A ratio with up to six decimals: the last three are dropped (A6: 0.5466 is 0.546).
        #[allow(clippy::cast_precision_loss)]
        let ratio = (ratio_milli as f64 * 1000.0 + f64::from(sub_milli)) / 1e6;
        let throttle = RetryThrottle::new(max_tokens, ratio).unwrap();
        let max = i64::from(max_tokens) * 1000;
        let mut model = Model { tokens: max, max, ratio: ratio_milli.min(max) };
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Failure => prop_assert_eq!(throttle.record_failure(), model.failure(), "step {}", step),
                Op::Success => throttle.record_success(),
                Op::Read => {}
            }
            if let Op::Success = op {
                model.success();
            }
            prop_assert_eq!(throttle.allows_retry(), model.allows(), "step {}", step);
            #[allow(clippy::cast_precision_loss)]
            let want = model.tokens as f64 / 1000.0;
            prop_assert_eq!(throttle.tokens(), want, "step {}", step);
        }
    }

    /// Rejected settings: `max_tokens` outside (0, 1000], a ratio under 0.001 (once rounded to
    /// six decimals: 0.0009996 counts as 0.001).
    #[test]
    fn out_of_range_settings_are_refused(max_tokens in 1001_u32.., ratio in 0.0_f64..0.000_999_5) {
        prop_assert_eq!(RetryThrottle::new(max_tokens, 0.1).unwrap_err().field(), "max_tokens");
        prop_assert_eq!(RetryThrottle::new(0, 0.1).unwrap_err().field(), "max_tokens");
        prop_assert_eq!(RetryThrottle::new(10, ratio).unwrap_err().field(), "token_ratio");
        prop_assert_eq!(RetryThrottle::new(10, -ratio - 1.0).unwrap_err().field(), "token_ratio");
    }
}

// ---- Concurrency -------------------------------------------------------------------------------

const THREADS: usize = 8;
const ROUNDS: usize = 20_000;

/// Threads hammering one throttle with failures and successes: every reading stays within
/// [0, `max_tokens`], and `record_failure`'s answer is never "retry" at 0 tokens.
#[test]
fn concurrent_failures_and_successes_stay_within_bounds() {
    let throttle = RetryThrottle::new(10, 0.7).unwrap();
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let throttle = throttle.clone();
            let start = &start;
            s.spawn(move || {
                start.wait();
                for i in 0..ROUNDS {
                    // A different mix per thread: some fail more, some succeed more.
                    if (i * (t + 1)) % 3 == 0 {
                        throttle.record_success();
                    } else {
                        let _ = throttle.record_failure();
                    }
                    let tokens = throttle.tokens();
                    assert!((0.0..=10.0).contains(&tokens), "{tokens}");
                }
            });
        }
    });
    assert!((0.0..=10.0).contains(&throttle.tokens()));
}

/// Where the end state does not depend on the interleaving, it is exact: only failures from
/// full end at `max(0, max − n)`; only successes from empty end at `min(max, n × ratio)`. No
/// update is lost under contention.
#[test]
fn concurrent_updates_are_not_lost() {
    // 8 × 100 failures from 1000 tokens: 200 left.
    let throttle = RetryThrottle::new(1000, 0.001).unwrap();
    let allowed = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let throttle = &throttle;
            let allowed = &allowed;
            s.spawn(move || {
                for _ in 0..100 {
                    if throttle.record_failure() {
                        allowed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(throttle.tokens(), 200.0);
    // Exactly the failures that left more than 500 tokens said "retry": 999 down to 501.
    assert_eq!(allowed.into_inner(), 499);

    // Then 8 × 10,000 successes of 0.001 from 0 (after draining): 80 tokens.
    for _ in 0..200 {
        throttle.record_failure();
    }
    assert_eq!(throttle.tokens(), 0.0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let throttle = &throttle;
            s.spawn(move || {
                for _ in 0..10_000 {
                    throttle.record_success();
                }
            });
        }
    });
    assert_eq!(throttle.tokens(), 80.0);

    // Past the top: capped at max_tokens, however the adds interleave.
    let throttle = RetryThrottle::new(5, 0.3).unwrap();
    for _ in 0..5 {
        throttle.record_failure();
    }
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let throttle = &throttle;
            s.spawn(move || {
                for _ in 0..1000 {
                    throttle.record_success();
                }
            });
        }
    });
    assert_eq!(throttle.tokens(), 5.0);
}
