//! The testing kit (`reattempt::testing`, feature `testing`) as a user's tests use it: a
//! 5-attempt schedule with 20 s of backoff, async and blocking, asserted through a `Script` and
//! a `Trace`, each finishing in well under 50 ms of wall time (measured here and printed; the
//! wall-time bound is asserted loosely, at 1 s, since a shared CI machine is noisy).

use std::time::{Duration, Instant};

use reattempt::retryable;
use reattempt::testing::{Script, trace, trace_blocking, with_test_clock};

#[derive(Debug, Clone, PartialEq)]
enum PayError {
    Unavailable,
    Declined,
}

impl reattempt::Transient for PayError {
    fn is_transient(&self) -> bool {
        *self == PayError::Unavailable
    }
}

/// 5 attempts, 5 s apart: 20 s of backoff.
#[retryable(max_attempts = 5, delay = "5s", backoff = "fixed", jitter = "none",
            retry_if = reattempt::transient)]
async fn charge(gateway: &Script<u32, PayError>) -> Result<u32, PayError> {
    gateway.next().await
}

/// The same, blocking.
#[retryable(max_attempts = 5, delay = "5s", backoff = "fixed", jitter = "none",
            retry_if = reattempt::transient)]
fn charge_blocking(gateway: &Script<u32, PayError>) -> Result<u32, PayError> {
    gateway.next_blocking()
}

const BACKOFF: Duration = Duration::from_secs(20);

#[tokio::test(start_paused = true)]
async fn an_async_schedule_of_20_s_runs_in_milliseconds() {
    let wall = Instant::now();
    let gateway = Script::new().then_always_err(PayError::Unavailable);
    let t0 = tokio::time::Instant::now();
    let (outcome, seen) = trace(charge(&gateway)).await;
    let paused = t0.elapsed();
    let took = wall.elapsed();
    println!("async: 20 s of backoff in {took:?} of wall time");
    assert_eq!(outcome, Err(PayError::Unavailable));
    assert_eq!(gateway.calls(), 5);
    assert_eq!(paused, BACKOFF, "the schedule, on the paused clock");
    assert_eq!(seen.delays(), [Duration::from_secs(5); 4]);
    assert_eq!(seen.give_ups()[0].reason, "attempts exhausted");
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[test]
fn a_blocking_schedule_of_20_s_runs_in_milliseconds() {
    let wall = Instant::now();
    let gateway = Script::new().then_always_err(PayError::Unavailable);
    let (outcome, paused, seen) = with_test_clock(|| {
        let t0 = tokio::time::Instant::now();
        let (outcome, seen) = trace_blocking(|| charge_blocking(&gateway));
        (outcome, t0.elapsed(), seen)
    });
    let took = wall.elapsed();
    println!("blocking: 20 s of backoff in {took:?} of wall time");
    assert_eq!(outcome, Err(PayError::Unavailable));
    assert_eq!(gateway.calls(), 5);
    assert_eq!(paused, BACKOFF);
    assert_eq!(seen.delays(), [Duration::from_secs(5); 4]);
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn a_declined_card_is_not_retried_and_a_blip_is() {
    let gateway = Script::new()
        .err(PayError::Unavailable)
        .ok_after(Duration::from_millis(120), 7);
    let (outcome, seen) = trace(charge(&gateway)).await;
    assert_eq!(outcome, Ok(7));
    assert_eq!(seen.retries().len(), 1);
    let attempts: Vec<_> = gateway.asked().iter().map(|a| a.attempt).collect();
    assert_eq!(attempts, [Some(1), Some(2)]);
    let keys: Vec<_> = gateway.asked().iter().map(|a| a.idempotency_key).collect();
    assert_eq!(keys[0], keys[1], "one call, one key");

    let gateway = Script::new().err(PayError::Declined);
    let (outcome, seen) = trace(charge(&gateway)).await;
    assert_eq!(outcome, Err(PayError::Declined));
    assert_eq!(gateway.calls(), 1);
    assert_eq!(seen.give_ups()[0].reason, "not retryable");
}

/// The README's testing example is the guide's first Testing example (its visible lines), which
/// runs as a doctest (`reattempt::guide::testing`): the README cannot drift from what runs.
#[test]
fn the_readmes_testing_example_is_the_guides_doctest() {
    const README: &str = include_str!("../README.md");
    const GUIDE: &str = include_str!("../docs/guide/testing.md");
    fn first_block_after<'a>(text: &'a str, heading: &str, fence: &str) -> &'a str {
        let at = text.find(heading).expect("the heading");
        let start = at + text[at..].find(fence).expect("a code block") + fence.len();
        let end = start + text[start..].find("```").expect("its end");
        &text[start..end]
    }
    let readme = first_block_after(README, "## Testing code that retries", "```rust,ignore\n");
    let guide = first_block_after(GUIDE, "## No real waiting", "```rust\n");
    let visible: Vec<&str> = guide
        .lines()
        .filter(|l| !(l.starts_with("# ") || *l == "#"))
        .collect();
    assert_eq!(readme.lines().collect::<Vec<_>>(), visible);
}
