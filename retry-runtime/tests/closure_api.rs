//! The closure API, `policy.retry(|| async { … }).retry_if(…).on_retry(…).retry_after(…).await`, under
//! paused time: with whole-millisecond sleeps, the time between attempts is exactly the sum of
//! the sleeps, so every timing is asserted exactly.

use std::cell::{Cell, RefCell};
use std::future::IntoFuture;
use std::io;
use std::time::Duration;

use retry_runtime::{
    Backoff, Elapsed, Jitter, RetryContext, RetryPolicy, RetryPolicyBuilder, context, seed_rng,
    transient,
};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

/// A policy without jitter, so that every sleep is exact.
fn exact(builder: RetryPolicyBuilder) -> RetryPolicy {
    builder
        .jitter(Jitter::None)
        .build()
        .expect("a valid policy")
}

/// The time between consecutive instants.
fn gaps(instants: &[Instant]) -> Vec<Duration> {
    instants.windows(2).map(|w| w[1] - w[0]).collect()
}

/// Each instant's offset from `t0`.
fn offsets(t0: Instant, instants: &[Instant]) -> Vec<Duration> {
    instants.iter().map(|t| *t - t0).collect()
}

fn failure(n: u32) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, format!("failure {n}"))
}

fn is_elapsed(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::TimedOut
        && e.get_ref()
            .is_some_and(|inner| inner.downcast_ref::<Elapsed>().is_some())
}

#[tokio::test(start_paused = true)]
async fn a_first_success_makes_one_attempt_and_no_sleep() {
    let policy = exact(RetryPolicy::builder().max_attempts(5));
    let t0 = Instant::now();
    let mut calls = 0;
    let out: io::Result<&str> = policy
        .retry(|| {
            calls += 1;
            async { Ok("done") }
        })
        .await;
    assert_eq!(out.unwrap(), "done");
    assert_eq!(calls, 1);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn exponential_sleeps_are_exact_until_success() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(6)
            .delay(100 * MS)
            .max_delay(Duration::from_secs(10)),
    );
    let t0 = Instant::now();
    let mut starts = vec![];
    let out: io::Result<u32> = policy
        .retry(|| {
            starts.push(Instant::now());
            let n = u32::try_from(starts.len()).unwrap();
            async move { if n < 5 { Err(failure(n)) } else { Ok(n) } }
        })
        .await;
    assert_eq!(out.unwrap(), 5);
    assert_eq!(starts.len(), 5);
    assert_eq!(starts[0], t0);
    assert_eq!(gaps(&starts), [100 * MS, 200 * MS, 400 * MS, 800 * MS]);
    assert_eq!(t0.elapsed(), 1500 * MS);
}

#[tokio::test(start_paused = true)]
async fn exhausted_attempts_return_the_last_error_with_sleeps_capped_at_max_delay() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(5)
            .delay(100 * MS)
            .max_delay(250 * MS),
    );
    let t0 = Instant::now();
    let mut starts = vec![];
    let err = policy
        .retry(|| {
            starts.push(Instant::now());
            let n = u32::try_from(starts.len()).unwrap();
            async move { Err::<(), _>(failure(n)) }
        })
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "failure 5");
    assert_eq!(starts.len(), 5);
    assert_eq!(gaps(&starts), [100 * MS, 200 * MS, 250 * MS, 250 * MS]);
    // No sleep after the last attempt.
    assert_eq!(t0.elapsed(), 800 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_single_attempt_policy_never_sleeps() {
    let policy = exact(RetryPolicy::builder().max_attempts(1));
    let t0 = Instant::now();
    let mut calls = 0;
    let err = policy
        .retry(|| {
            calls += 1;
            async { Err::<(), _>(failure(1)) }
        })
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "failure 1");
    assert_eq!(calls, 1);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn fixed_and_linear_backoff_sleep_exactly() {
    for (backoff, expected) in [
        (Backoff::Fixed, [50 * MS, 50 * MS, 50 * MS]),
        (Backoff::Linear, [50 * MS, 100 * MS, 150 * MS]),
    ] {
        let policy = exact(
            RetryPolicy::builder()
                .max_attempts(4)
                .delay(50 * MS)
                .backoff(backoff),
        );
        let mut starts = vec![];
        let out: io::Result<()> = policy
            .retry(|| {
                starts.push(Instant::now());
                async { Err(failure(0)) }
            })
            .await;
        assert!(out.is_err());
        assert_eq!(gaps(&starts), expected, "{backoff:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_time_an_attempt_takes_adds_to_the_sleep() {
    let policy = exact(RetryPolicy::builder().max_attempts(3).delay(100 * MS));
    let t0 = Instant::now();
    let mut starts = vec![];
    let out: io::Result<()> = policy
        .retry(|| {
            starts.push(Instant::now());
            async {
                sleep(30 * MS).await;
                Err(failure(0))
            }
        })
        .await;
    assert!(out.is_err());
    assert_eq!(offsets(t0, &starts), [Duration::ZERO, 130 * MS, 360 * MS]);
    assert_eq!(t0.elapsed(), 390 * MS);
}

#[tokio::test(start_paused = true)]
async fn when_stops_on_a_non_retryable_error_after_one_attempt() {
    let policy = exact(RetryPolicy::builder().max_attempts(5));
    let t0 = Instant::now();
    let mut calls = 0;
    let mut notified = 0;
    let err = policy
        .retry(|| {
            calls += 1;
            async { Err::<(), _>(io::Error::from(io::ErrorKind::PermissionDenied)) }
        })
        .retry_if(|e: &io::Error| e.kind() != io::ErrorKind::PermissionDenied)
        .on_retry(|_: &io::Error, _: &RetryContext, _| notified += 1)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(calls, 1);
    assert_eq!(notified, 0);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn when_retries_transient_errors_until_a_permanent_one() {
    let policy = exact(RetryPolicy::builder().max_attempts(5).delay(100 * MS));
    let kinds = [
        io::ErrorKind::ConnectionReset,
        io::ErrorKind::ConnectionRefused,
        io::ErrorKind::NotFound,
        io::ErrorKind::ConnectionReset,
    ];
    let t0 = Instant::now();
    let mut starts = vec![];
    let err = policy
        .retry(|| {
            let kind = kinds[starts.len()];
            starts.push(Instant::now());
            async move { Err::<(), _>(io::Error::from(kind)) }
        })
        .retry_if(transient)
        .idempotent(true)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert_eq!(offsets(t0, &starts), [Duration::ZERO, 100 * MS, 300 * MS]);
    assert_eq!(t0.elapsed(), 300 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_times_out_as_timed_out_and_is_retried() {
    let policy = exact(
        RetryPolicy::builder()
            .idempotent(true)
            .max_attempts(3)
            .delay(100 * MS)
            .backoff(Backoff::Fixed)
            .timeout(50 * MS),
    );
    let t0 = Instant::now();
    let mut starts = vec![];
    let finished = Cell::new(0);
    let err = policy
        .retry(|| {
            starts.push(Instant::now());
            let finished = &finished;
            async move {
                sleep(Duration::from_secs(1)).await;
                finished.set(finished.get() + 1);
                Ok::<(), io::Error>(())
            }
        })
        .await
        .unwrap_err();
    assert!(is_elapsed(&err), "{err:?}");
    assert_eq!(starts.len(), 3);
    // Each attempt is cut at 50 ms, then the 100 ms sleep.
    assert_eq!(offsets(t0, &starts), [Duration::ZERO, 150 * MS, 300 * MS]);
    assert_eq!(t0.elapsed(), 350 * MS);
    assert_eq!(
        finished.get(),
        0,
        "a timed-out attempt is dropped, not finished"
    );
}

#[tokio::test(start_paused = true)]
async fn an_attempt_within_its_timeout_completes_after_a_timed_out_one() {
    let policy = exact(
        RetryPolicy::builder()
            .idempotent(true)
            .max_attempts(3)
            .delay(100 * MS)
            .backoff(Backoff::Fixed)
            .timeout(50 * MS),
    );
    let t0 = Instant::now();
    let mut starts = vec![];
    let out: io::Result<u32> = policy
        .retry(|| {
            starts.push(Instant::now());
            let n = u32::try_from(starts.len()).unwrap();
            async move {
                sleep(if n == 1 {
                    Duration::from_secs(1)
                } else {
                    49 * MS
                })
                .await;
                Ok(n)
            }
        })
        .await;
    assert_eq!(out.unwrap(), 2);
    assert_eq!(offsets(t0, &starts), [Duration::ZERO, 150 * MS]);
    assert_eq!(t0.elapsed(), 199 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_the_predicate_refuses_is_returned_at_once() {
    let policy = exact(RetryPolicy::builder().max_attempts(3).timeout(50 * MS));
    let t0 = Instant::now();
    let mut calls = 0;
    let err = policy
        .retry(|| {
            calls += 1;
            std::future::pending::<io::Result<()>>()
        })
        .retry_if(|e: &io::Error| e.kind() != io::ErrorKind::TimedOut)
        .await
        .unwrap_err();
    assert!(is_elapsed(&err));
    assert_eq!(calls, 1);
    assert_eq!(t0.elapsed(), 50 * MS);
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_starts_no_sleep_that_would_end_at_or_past_the_deadline() {
    // Attempts at 0, 300, 600 and 900 ms; the sleep after the fourth would end at 1200 ms.
    for (limit, attempts, ends_at) in [(1000 * MS, 4, 900 * MS), (900 * MS, 3, 600 * MS)] {
        let policy = exact(
            RetryPolicy::builder()
                .max_attempts(100)
                .delay(300 * MS)
                .backoff(Backoff::Fixed)
                .max_elapsed(limit),
        );
        let t0 = Instant::now();
        let mut starts = vec![];
        let err = policy
            .retry(|| {
                starts.push(Instant::now());
                let n = u32::try_from(starts.len()).unwrap();
                async move { Err::<(), _>(failure(n)) }
            })
            .await
            .unwrap_err();
        // With a 900 ms limit the third sleep would end exactly at the deadline: refused.
        assert_eq!(starts.len(), attempts, "max_elapsed {limit:?}");
        assert_eq!(err.to_string(), format!("failure {attempts}"));
        assert!(gaps(&starts).iter().all(|g| *g == 300 * MS));
        assert_eq!(t0.elapsed(), ends_at, "max_elapsed {limit:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_clips_the_last_attempts_timeout() {
    // Attempt 1 runs 0–400 ms (timeout), sleeps to 700 ms; attempt 2 has 300 ms left, not 400.
    let policy = exact(
        RetryPolicy::builder()
            .idempotent(true)
            .max_attempts(10)
            .delay(300 * MS)
            .backoff(Backoff::Fixed)
            .timeout(400 * MS)
            .max_elapsed(1000 * MS),
    );
    let t0 = Instant::now();
    let mut starts = vec![];
    let err = policy
        .retry(|| {
            starts.push(Instant::now());
            std::future::pending::<io::Result<()>>()
        })
        .await
        .unwrap_err();
    assert!(is_elapsed(&err), "{err:?}");
    assert_eq!(offsets(t0, &starts), [Duration::ZERO, 700 * MS]);
    assert_eq!(
        t0.elapsed(),
        1000 * MS,
        "the second attempt is cut at the deadline"
    );
}

/// An error that may carry a server's requested delay.
#[derive(Debug, PartialEq)]
enum ApiError {
    Busy { retry_after: Option<Duration> },
    TimedOut,
}

impl From<Elapsed> for ApiError {
    fn from(_: Elapsed) -> Self {
        ApiError::TimedOut
    }
}

fn retry_after(e: &ApiError) -> Option<Duration> {
    match e {
        ApiError::Busy { retry_after } => *retry_after,
        ApiError::TimedOut => None,
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_a_floor_under_the_computed_delay() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(6)
            .delay(100 * MS)
            .max_delay(2000 * MS),
    );
    let hints = [Some(750 * MS), None, Some(Duration::ZERO), Some(2000 * MS)];
    let t0 = Instant::now();
    let mut starts = vec![];
    let mut notified = vec![];
    let out = policy
        .retry(|| {
            let n = starts.len();
            starts.push(Instant::now());
            async move {
                match hints.get(n) {
                    Some(&retry_after) => Err(ApiError::Busy { retry_after }),
                    None => Ok(n + 1),
                }
            }
        })
        .retry_after(retry_after)
        .on_retry(|_: &ApiError, _: &RetryContext, delay| notified.push(delay))
        .await;
    assert_eq!(out, Ok(5));
    // 750 ms asked (over the schedule's 100); no hint: the schedule's 200 ms; zero asked: still
    // the schedule's 400 ms (never every client at once); exactly max_delay asked.
    let expected = [750 * MS, 200 * MS, 400 * MS, 2000 * MS];
    assert_eq!(gaps(&starts), expected);
    assert_eq!(notified, expected);
    assert_eq!(t0.elapsed(), 3350 * MS);
}

/// Coming back before the server allows would only be refused again: a hint beyond `max_delay`
/// ends the call with that error, at once.
#[tokio::test(start_paused = true)]
async fn retry_after_beyond_max_delay_ends_the_call_with_its_error() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(6)
            .delay(100 * MS)
            .max_delay(2000 * MS),
    );
    let t0 = Instant::now();
    let mut calls = 0;
    let hint = Some(Duration::from_secs(10));
    let out: Result<(), _> = policy
        .retry(|| {
            calls += 1;
            async move { Err(ApiError::Busy { retry_after: hint }) }
        })
        .retry_after(retry_after)
        .await;
    assert_eq!(out, Err(ApiError::Busy { retry_after: hint }));
    assert_eq!(calls, 1);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_bounded_by_max_elapsed() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(10)
            .delay(100 * MS)
            .max_delay(2000 * MS)
            .max_elapsed(1000 * MS),
    );
    for (hint, attempts, ends_at) in [
        // Beyond max_delay (2 s): the call ends at once.
        (Duration::from_secs(5), 1, Duration::ZERO),
        // 0 → 600 ms → 1200 ms would pass the deadline.
        (600 * MS, 2, 600 * MS),
        // 0 → 400 → 800; 1200 would pass it.
        (400 * MS, 3, 800 * MS),
    ] {
        let t0 = Instant::now();
        let mut starts = vec![];
        let err = policy
            .retry(|| {
                starts.push(Instant::now());
                async move {
                    Err::<(), _>(ApiError::Busy {
                        retry_after: Some(hint),
                    })
                }
            })
            .retry_after(retry_after)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ApiError::Busy {
                retry_after: Some(hint)
            }
        );
        assert_eq!(starts.len(), attempts, "hint {hint:?}");
        assert_eq!(t0.elapsed(), ends_at, "hint {hint:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_becomes_the_error_types_timeout_variant() {
    let policy = exact(
        RetryPolicy::builder()
            .idempotent(true)
            .max_attempts(2)
            .delay(100 * MS)
            .timeout(20 * MS),
    );
    let t0 = Instant::now();
    let out: Result<(), ApiError> = policy.retry(std::future::pending).await;
    assert_eq!(out, Err(ApiError::TimedOut));
    assert_eq!(t0.elapsed(), 140 * MS);
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Attempt {
        n: u32,
        at: Duration,
    },
    Notify {
        attempt: u32,
        max_attempts: u32,
        delay: Duration,
        at: Duration,
        error: String,
    },
}

#[tokio::test(start_paused = true)]
async fn notify_runs_before_each_sleep_with_the_attempt_and_its_delay() {
    let policy = exact(RetryPolicy::builder().max_attempts(4).delay(100 * MS));
    let t0 = Instant::now();
    let log = RefCell::new(vec![]);
    let keys = RefCell::new(vec![]);
    let err = policy
        .retry(|| {
            let n = context().expect("inside an attempt").attempt();
            log.borrow_mut().push(Event::Attempt {
                n,
                at: t0.elapsed(),
            });
            keys.borrow_mut().push(context().unwrap().idempotency_key());
            async move { Err::<(), _>(failure(n)) }
        })
        .on_retry(|e: &io::Error, ctx: &RetryContext, delay| {
            keys.borrow_mut().push(ctx.idempotency_key());
            log.borrow_mut().push(Event::Notify {
                attempt: ctx.attempt(),
                max_attempts: ctx.max_attempts(),
                delay,
                at: t0.elapsed(),
                error: e.to_string(),
            });
        })
        .name("notify-test")
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "failure 4");
    let notify = |attempt: u32, delay: u32, at: u32| Event::Notify {
        attempt,
        max_attempts: 4,
        delay: delay * MS,
        at: at * MS,
        error: format!("failure {attempt}"),
    };
    let attempt = |n: u32, at: u32| Event::Attempt { n, at: at * MS };
    assert_eq!(
        log.into_inner(),
        [
            attempt(1, 0),
            notify(1, 100, 0),
            attempt(2, 100),
            notify(2, 200, 100),
            attempt(3, 300),
            notify(3, 400, 300),
            attempt(4, 700),
            // No notification after the last attempt: nothing follows it.
        ]
    );
    let keys = keys.into_inner();
    assert_eq!(keys.len(), 7);
    assert!(
        keys.iter().all(|k| *k == keys[0]),
        "one key per call: {keys:?}"
    );
}

/// What an attempt saw of its call.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    attempt: u32,
    max_attempts: u32,
    elapsed: Duration,
}

#[tokio::test(start_paused = true)]
async fn context_describes_the_running_attempt() {
    assert!(context().is_none());
    let policy = exact(RetryPolicy::builder().max_attempts(3).delay(100 * MS));
    let mut call_keys = vec![];
    for _ in 0..2 {
        let seen = RefCell::new(vec![]);
        let keys = RefCell::new(vec![]);
        let out: io::Result<u32> = policy
            .retry(|| {
                // Making the attempt's future: the context is already this attempt's.
                let ctx = context().expect("inside the closure");
                keys.borrow_mut().push(ctx.idempotency_key());
                let (seen, keys) = (&seen, &keys);
                async move {
                    tokio::task::yield_now().await;
                    sleep(10 * MS).await;
                    // Polling the attempt, after awaits: still this attempt's context.
                    let now = context().expect("inside the attempt");
                    assert_eq!(now.attempt(), ctx.attempt());
                    keys.borrow_mut().push(now.idempotency_key());
                    seen.borrow_mut().push(Seen {
                        attempt: now.attempt(),
                        max_attempts: now.max_attempts(),
                        elapsed: now.elapsed(),
                    });
                    if now.attempt() < 3 {
                        Err(failure(now.attempt()))
                    } else {
                        Ok(now.attempt())
                    }
                }
            })
            .await;
        assert_eq!(out.unwrap(), 3);
        assert!(context().is_none(), "no context after the call");
        let expected = |attempt, elapsed: u32| Seen {
            attempt,
            max_attempts: 3,
            elapsed: elapsed * MS,
        };
        // The clock starts at the first `context()`, when attempt 1 is made (0 ms); each
        // attempt reads it 10 ms in: attempts start at 0, 110 and 320 ms.
        assert_eq!(
            seen.into_inner(),
            [expected(1, 10), expected(2, 120), expected(3, 330)]
        );
        let keys = keys.into_inner();
        assert_eq!(keys.len(), 6);
        assert!(
            keys.iter().all(|k| *k == keys[0]),
            "a stable key within a call: {keys:?}"
        );
        call_keys.push(keys[0]);
    }
    assert_ne!(call_keys[0], call_keys[1], "a new key for every call");
}

#[tokio::test(start_paused = true)]
async fn context_reports_attempts_max_attempts_and_elapsed_time() {
    let policy = exact(RetryPolicy::builder().max_attempts(3).delay(100 * MS));
    let seen = RefCell::new(vec![]);
    let out: io::Result<()> = policy
        .retry(|| async {
            sleep(10 * MS).await;
            let ctx = context().expect("inside the attempt");
            seen.borrow_mut().push(Seen {
                attempt: ctx.attempt(),
                max_attempts: ctx.max_attempts(),
                elapsed: ctx.elapsed(),
            });
            Err(failure(ctx.attempt()))
        })
        .await;
    assert_eq!(out.unwrap_err().to_string(), "failure 3");
    let expected = |attempt, elapsed: u32| Seen {
        attempt,
        max_attempts: 3,
        elapsed: elapsed * MS,
    };
    // Without max_elapsed the clock starts at the first `context()` (10 ms into attempt 1);
    // attempt 2 runs at 110–120 ms, attempt 3 at 320–330 ms.
    assert_eq!(
        seen.into_inner(),
        [expected(1, 0), expected(2, 110), expected(3, 320)]
    );
}

#[tokio::test(start_paused = true)]
async fn with_max_elapsed_the_context_clock_starts_with_the_call() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(100 * MS)
            .max_elapsed(Duration::from_secs(60)),
    );
    let elapsed = RefCell::new(vec![]);
    let out: io::Result<()> = policy
        .retry(|| async {
            sleep(10 * MS).await;
            let ctx = context().unwrap();
            elapsed.borrow_mut().push(ctx.elapsed());
            Err(failure(ctx.attempt()))
        })
        .await;
    assert!(out.is_err());
    assert_eq!(elapsed.into_inner(), [10 * MS, 120 * MS, 330 * MS]);
}

#[tokio::test(start_paused = true)]
async fn context_does_not_leak_into_other_tasks_and_nested_calls_see_their_own() {
    let outer_policy = exact(RetryPolicy::builder().max_attempts(2).delay(100 * MS));
    let inner_policy = exact(RetryPolicy::builder().max_attempts(3).delay(10 * MS));
    let log = RefCell::new(vec![]);
    let out: io::Result<()> = outer_policy
        .retry(|| async {
            let outer = context().unwrap();
            let spawned = tokio::spawn(async { context().is_none() });
            assert!(spawned.await.unwrap(), "a spawned task has no context");
            let inner: io::Result<()> = inner_policy
                .retry(|| async {
                    let ctx = context().unwrap();
                    log.borrow_mut()
                        .push(("inner", ctx.attempt(), ctx.max_attempts()));
                    assert_ne!(ctx.idempotency_key(), outer.idempotency_key());
                    Err(failure(ctx.attempt()))
                })
                .await;
            assert_eq!(inner.unwrap_err().to_string(), "failure 3");
            let after = context().unwrap();
            assert_eq!(after.idempotency_key(), outer.idempotency_key());
            log.borrow_mut()
                .push(("outer", after.attempt(), after.max_attempts()));
            Err(failure(after.attempt()))
        })
        .await;
    assert_eq!(out.unwrap_err().to_string(), "failure 2");
    assert_eq!(
        log.into_inner(),
        [
            ("inner", 1, 3),
            ("inner", 2, 3),
            ("inner", 3, 3),
            ("outer", 1, 2),
            ("inner", 1, 3),
            ("inner", 2, 3),
            ("inner", 3, 3),
            ("outer", 2, 2),
        ]
    );
    assert!(context().is_none());
}

/// The sleeps one failing call takes (as told to `notify`) and the gaps between its attempts.
async fn jittered_run(policy: &RetryPolicy) -> (Vec<Duration>, Vec<Duration>) {
    let mut starts = vec![];
    let mut delays = vec![];
    let out: io::Result<()> = policy
        .retry(|| {
            starts.push(Instant::now());
            async { Err(failure(0)) }
        })
        .on_retry(|_: &io::Error, _: &RetryContext, d| delays.push(d))
        .await;
    assert!(out.is_err());
    (delays, gaps(&starts))
}

#[tokio::test(start_paused = true)]
async fn seeded_jitter_gives_reproducible_sleeps() {
    let policy = RetryPolicy::builder()
        .max_attempts(8)
        .delay(100 * MS)
        .max_delay(Duration::from_secs(2))
        .jitter(Jitter::Full)
        .build()
        .unwrap();
    seed_rng(42);
    let (first, first_gaps) = jittered_run(&policy).await;
    seed_rng(42);
    let (again, again_gaps) = jittered_run(&policy).await;
    seed_rng(42);
    let schedule: Vec<Duration> = policy.delays().collect();
    seed_rng(43);
    let (other, _) = jittered_run(&policy).await;

    assert_eq!(first.len(), 7);
    assert_eq!(first, again, "the same seed gives the same sleeps");
    assert_eq!(first_gaps, again_gaps);
    assert_eq!(
        first, schedule,
        "the call draws the schedule `delays()` gives"
    );
    assert_ne!(first, other, "another seed gives other sleeps");
    for (n, (sleep, gap)) in (1..).zip(first.iter().zip(&first_gaps)) {
        let d = Backoff::Exponential.delay(n, 100 * MS, 2.0, Duration::from_secs(2));
        assert!(*sleep <= d, "retry {n}: {sleep:?} > {d:?}");
        // Tokio's timer has millisecond resolution: a sleep ends on the next whole millisecond.
        assert!(
            gap.checked_sub(*sleep).is_some_and(|extra| extra < MS),
            "retry {n}: slept {gap:?} for {sleep:?}"
        );
    }
}

fn assert_send<T: Send>(_: &T) {}

static POLICY: RetryPolicy = match RetryPolicy::builder()
    .max_attempts(3)
    .delay(Duration::from_millis(100))
    .jitter(Jitter::None)
    .timeout(Duration::from_secs(1))
    .build()
{
    Ok(policy) => policy,
    Err(_) => panic!("invalid policy"),
};

#[tokio::test(start_paused = true)]
async fn the_retry_future_is_send() {
    let policy = exact(RetryPolicy::builder().max_attempts(3).delay(100 * MS));
    let future = policy
        .retry(|| async {
            let ctx = context().unwrap();
            sleep(MS).await;
            if ctx.attempt() < 2 {
                Err(failure(ctx.attempt()))
            } else {
                Ok(ctx.attempt())
            }
        })
        .retry_if(transient)
        .idempotent(true)
        .on_retry(|_: &io::Error, _: &RetryContext, _| {})
        .retry_after(|_: &io::Error| None)
        .into_future();
    assert_send(&future);
    assert_eq!(future.await.unwrap(), 2);

    // And it can be spawned onto a runtime.
    let t0 = Instant::now();
    let handle = tokio::spawn(
        POLICY
            .retry(|| async {
                match context().map(|c| c.attempt()) {
                    Some(3) => Ok(3),
                    Some(n) => Err(failure(n)),
                    None => unreachable!("inside an attempt"),
                }
            })
            .into_future(),
    );
    assert_eq!(handle.await.unwrap().unwrap(), 3);
    assert_eq!(t0.elapsed(), 300 * MS);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_future_during_a_sleep_stops_the_retries() {
    let policy = exact(RetryPolicy::builder().max_attempts(10).delay(100 * MS));
    let calls = Cell::new(0);
    let out = tokio::time::timeout(
        250 * MS,
        policy
            .retry(|| {
                calls.set(calls.get() + 1);
                async { Err::<(), _>(failure(0)) }
            })
            .into_future(),
    )
    .await;
    assert!(out.is_err(), "the outer timeout fired");
    // Attempts at 0 and 100 ms; cancelled during the 200 ms sleep.
    assert_eq!(calls.get(), 2);
    sleep(Duration::from_secs(10)).await;
    assert_eq!(calls.get(), 2);
}

/// The `max_elapsed` clock starts with the first attempt, not when the future is made: a future
/// polled later than it was made keeps its whole budget (before the fix, one polled after
/// `max_elapsed` got a zero timeout and failed at once with `TimedOut`).
#[tokio::test(start_paused = true)]
async fn max_elapsed_counts_from_the_first_attempt_not_from_into_future() {
    let policy = exact(
        RetryPolicy::builder()
            .max_attempts(100)
            .delay(300 * MS)
            .backoff(Backoff::Fixed)
            .timeout(Duration::from_secs(5))
            .max_elapsed(1000 * MS),
    );
    let t0 = Instant::now();
    let mut starts = vec![];
    let mut elapsed = vec![];
    let future = policy
        .retry(|| {
            starts.push(Instant::now());
            elapsed.push(context().unwrap().elapsed());
            async {
                sleep(MS).await;
                Err::<(), _>(failure(0))
            }
        })
        .into_future();
    sleep(1500 * MS).await;
    let err = future.await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "failure 0",
        "not a zero-length timeout: {err:?}"
    );
    // Attempts at 1500, 1801, 2102 and 2403 ms; the next sleep would end at 2704 ms, past the
    // deadline at 2500 ms.
    assert_eq!(
        offsets(t0, &starts),
        [1500 * MS, 1801 * MS, 2102 * MS, 2403 * MS]
    );
    assert_eq!(elapsed[0], Duration::ZERO);
}

/// `.circuit_breaker(&b)`: the attempts feed the breaker; a retry it rejects ends the call with
/// the last real error, and a call it rejects at once with `E::from(BreakerOpen)`.
#[tokio::test(start_paused = true)]
async fn the_closure_api_passes_attempts_through_a_breaker() {
    use retry_runtime::{BreakerState, CircuitBreaker};
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let policy = exact(RetryPolicy::builder().max_attempts(5));
    let calls = Cell::new(0);
    let out: io::Result<u32> = policy
        .retry(|| {
            calls.set(calls.get() + 1);
            async { Err(io::ErrorKind::ConnectionReset.into()) }
        })
        .circuit_breaker(&breaker)
        .await;
    assert_eq!(calls.get(), 2, "the breaker opened after two failures");
    assert_eq!(
        out.unwrap_err().kind(),
        io::ErrorKind::ConnectionReset,
        "the last real error"
    );
    assert_eq!(breaker.state(), BreakerState::Open);
    let start = Instant::now();
    let out: io::Result<u32> = policy
        .retry(|| async { Ok(1) })
        .circuit_breaker(&breaker)
        .await;
    assert_eq!(
        out.unwrap_err().to_string(),
        "circuit breaker is open",
        "rejected while open"
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// `.budget(&b)`: retries are paid for; an empty budget ends the call with its last error.
#[tokio::test(start_paused = true)]
async fn the_closure_api_pays_retries_from_a_budget() {
    use retry_runtime::RetryBudget;
    let budget = RetryBudget::builder()
        .max_tokens(10)
        .retry_cost(5)
        .build()
        .unwrap();
    let policy = exact(RetryPolicy::builder().max_attempts(10));
    let calls = Cell::new(0);
    let out: io::Result<u32> = policy
        .retry(|| {
            calls.set(calls.get() + 1);
            async { Err(io::ErrorKind::ConnectionReset.into()) }
        })
        .budget(&budget)
        .await;
    assert!(out.is_err());
    assert_eq!(calls.get(), 3, "10 tokens at 5 pay for two retries");
    assert_eq!(budget.available(), 0);
    let ok: io::Result<u32> = policy.retry(|| async { Ok(7) }).budget(&budget).await;
    assert_eq!(ok.unwrap(), 7);
    assert_eq!(budget.available(), 1, "a success pays one token back");
}
