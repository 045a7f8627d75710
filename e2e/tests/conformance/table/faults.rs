//! Rows of fault injection (feature `testing`).

use super::*;

// Fault injection (feature `testing`, `testing::FaultInjection`): attempt `a` (1-based) of the
// policy's call `k` (0-based, in the order calls first draw) draws `u = SplitMix64(seed,
// k · 2^26 + a)`; every row's call is its policy's first (`k` = 0), so attempt `a` draws at `a`.
// Below `rate` it is an injected error (the body is
// not polled: after the latency, if any, the attempt fails with the driver's timeout
// conversion, a timeout-class failure retried as one), below `rate + latency_rate` an attempt
// made after the latency, which counts against its `timeout`. Each fault is counted when its
// attempt's outcome is decided. The draws of attempts 1, 2, 3 of seed 7: 0.017, 0.901, 0.583;
// of seed 0: 0.432, 0.026, 0.971.

/// Seed 7, rate 0.5: the first attempt draws 0.017 (an injected error, failed at once with
/// `TimedOut`, its body never run), the second 0.901 (untouched).
#[cfg(feature = "testing")]
pub fn injected_error_then_success() -> Scenario {
    Scenario::new("injected_error_then_success")
        .timeout(50)
        .inject_faults(0.5, None, 0.0, 7)
        .script([ok(1)])
        .returns(Ok(1))
        .attempts([(100, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([injected(1, "error"), retrying_as(1, 100, "timeout")])
        .ends_at(100)
}

/// Rate 1: every attempt is an injected error, until the attempts run out; the body never runs.
#[cfg(feature = "testing")]
pub fn injected_errors_until_exhausted() -> Scenario {
    Scenario::new("injected_errors_until_exhausted")
        .timeout(50)
        .inject_faults(1.0, None, 0.0, 4)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .attempts([])
        .on_retry([(TimedOut, 1, 100), (TimedOut, 2, 200)])
        .events([
            injected(1, "error"),
            retrying_as(1, 100, "timeout"),
            injected(2, "error"),
            retrying_as(2, 200, "timeout"),
            injected(3, "error"),
            give_up(3, R::Exhausted),
        ])
        .ends_at(300)
}

/// Every attempt is made 30 ms late (`latency_rate` 1), under a 50 ms timeout fixed when it
/// began: the first body starts at 30 and needs 30 more, so the attempt is cut at 50; the retry
/// starts at 150, its body at 180, and answers at once.
#[cfg(feature = "testing")]
pub fn injected_latency_cut_by_the_timeout() -> Scenario {
    Scenario::new("injected_latency_cut_by_the_timeout")
        .timeout(50)
        .inject_faults(0.0, Some(30), 1.0, 4)
        .script([ok(1).after(30), ok(2)])
        .returns(Ok(2))
        .attempts([(30, 1), (180, 2)])
        .on_retry([(TimedOut, 1, 100)])
        .events([
            injected(1, "latency"),
            retrying_as(1, 100, "timeout"),
            injected(2, "latency"),
        ])
        .ends_at(180)
}

/// An injected latency longer than the timeout: the attempt times out at its limit, unpolled
/// (an injected error after a latency past the limit would too: the limit comes first).
#[cfg(feature = "testing")]
pub fn injected_latency_past_the_timeout() -> Scenario {
    Scenario::new("injected_latency_past_the_timeout")
        .max_attempts(2)
        .timeout(50)
        .inject_faults(0.0, Some(80), 1.0, 4)
        .script([ok(1)])
        .returns(Err(TimedOut))
        .attempts([])
        .on_retry([(TimedOut, 1, 100)])
        .events([
            injected(1, "latency"),
            retrying_as(1, 100, "timeout"),
            injected(2, "latency"),
            give_up(2, R::Exhausted),
        ])
        .ends_at(200)
}

/// Each copy of a hedged call draws. Seed 7, rate 0.5, latency 50: the first copy (0.017) is an
/// injected error after 50 ms, never run; the hedge at 30 (0.901) runs and answers at 70. The
/// first copy's failure at 50 uses up the attempts while the hedge is in flight: the call waits
/// for it, as `hedge_copies_cut_by_their_timeouts` does.
#[cfg(feature = "testing")]
pub fn injected_error_in_a_hedged_call() -> Scenario {
    Scenario::new("injected_error_in_a_hedged_call")
        .max_attempts(2)
        .hedge_after(30)
        .inject_faults(0.5, Some(50), 0.0, 7)
        .script([ok(2).after(40)])
        .returns(Ok(2))
        .attempts([(30, 2)])
        .events([hedging(2), injected(1, "error")])
        .ends_at(70)
}

/// The hedge draws too. Seed 0, rate 0.2: the first copy (0.432) runs; the hedge at 30 (0.026)
/// is an injected error at once, never run; the first copy answers at 100.
#[cfg(feature = "testing")]
pub fn injected_error_in_a_hedge() -> Scenario {
    Scenario::new("injected_error_in_a_hedge")
        .max_attempts(2)
        .hedge_after(30)
        .inject_faults(0.2, None, 0.0, 0)
        .script([ok(1).after(100)])
        .returns(Ok(1))
        .attempts([(0, 1)])
        .events([hedging(2), injected(2, "error")])
        .ends_at(100)
}
