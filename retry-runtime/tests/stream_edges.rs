//! Edges of resumed streams a hostile review found (each test here failed first): the task's
//! cooperative budget, `remaining()` while streaming, the give-up of a resumed stream, the ratio
//! budget, resumes a guard turned away, `opened()` mid-stream, `max_attempts` after progress, a
//! panicking `advance`.

use std::io;
use std::task::Poll;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt, stream};
use retry_runtime::{CircuitBreaker, Jitter, RetryBudget, RetryPolicy, context};

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(100))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

/// A source whose connection is up and busy but gives the consumer nothing: heartbeats it
/// filters out, from a channel that is always ready (`rx.filter(..)` over a busy feed). Each
/// heartbeat spends tokio's cooperative budget, as a tokio channel's `recv` does.
fn busy_silence() -> impl futures_util::Stream<Item = io::Result<u64>> {
    stream::poll_fn(|cx| {
        loop {
            // A heartbeat arrives at once; filtered out. When the task's budget is spent, the
            // channel says Pending and wakes the task (tokio's coop).
            if std::pin::pin!(tokio::task::coop::consume_budget())
                .poll(cx)
                .is_pending()
            {
                return Poll::Pending;
            }
        }
    })
}

/// `idle_timeout` ("a stream that gives no item for `idle` has stalled") never fires when the
/// source spends the task's cooperative budget: the timer is polled after the source, inside the
/// spent budget (`drivers::timed::poll_timer` handles this for every other driver).
#[tokio::test(flavor = "current_thread")]
async fn idle_timeout_fires_for_a_source_that_spends_the_coop_budget() {
    let policy = RetryPolicy::builder().max_attempts(1).build().unwrap();
    let mut s = policy
        .retry_stream(|_: u64| async { Ok(busy_silence()) })
        .resume(0, |after, item: &u64| *after = *item)
        .idle_timeout(Duration::from_millis(100));
    let first = tokio::time::timeout(Duration::from_secs(3), s.next()).await;
    assert!(
        matches!(first, Ok(Some(Err(_)))),
        "stalled for 3 s with idle_timeout 100 ms: the idle timer never fired"
    );
}

/// The same with the policy's `timeout`, which "bounds each open": an open that spends the
/// budget (it polls an always-ready channel before answering) is never cut.
#[tokio::test(flavor = "current_thread")]
async fn the_open_timeout_fires_for_an_open_that_spends_the_coop_budget() {
    let policy = RetryPolicy::builder()
        .max_attempts(1)
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut s = policy
        .retry_stream(|_: u64| async {
            busy_silence().next().await;
            Ok(stream::empty::<io::Result<u64>>())
        })
        .resume(0, |after, item: &u64| *after = *item);
    let first = tokio::time::timeout(Duration::from_secs(3), s.next()).await;
    assert!(
        matches!(first, Ok(Some(Err(_)))),
        "an open of 3 s under timeout 100 ms was never cut"
    );
}

/// `context().remaining()` while the source is polled reads the *open's* time limit, long
/// spent: `Some(0)`. The policy's timeout bounds only the open, and nothing limits the gap here
/// (no idle limit, no `max_elapsed`). `reattempt::sqlx::postgres_timeouts()` and the gRPC layer's
/// `grpc-timeout` read this: a source that runs a query per page gets `statement_timeout = 1`
/// for every page after the open's limit.
#[tokio::test(start_paused = true)]
async fn remaining_while_streaming_is_not_the_spent_limit_of_the_open() {
    let policy = RetryPolicy::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let pages = policy
        .retry_stream(|after: u64| async move {
            Ok::<_, io::Error>(stream::unfold(after, |n| async move {
                // One page every 2 s, bounded by what the attempt has left.
                tokio::time::sleep(Duration::from_secs(2)).await;
                let left = context().unwrap().remaining();
                (n < 2).then(|| (Ok((n + 1, left)), n + 1))
            }))
        })
        .resume(0, |after, page: &(u64, Option<Duration>)| *after = page.0);
    let got: Vec<_> = pages.map(|p| p.unwrap().1).collect().await;
    assert_eq!(got, [None, None], "nothing limits a page");
}

/// A stream that was resumed (after progress) and then gave up with an error not retried is a
/// call that retried (`failed_with_retry`), as a stream that ends cleanly after the same resume
/// is `successful_with_retry`, though progress restarted its schedule's count.
#[cfg(feature = "metrics")]
#[test]
fn a_stream_resumed_then_given_up_is_failed_with_retry() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let policy = policy();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let mut s = policy
                .retry_stream(|after: u64| async move {
                    // Item 1 then a reset; on the resume, item 2 then a refusal not retried.
                    let kind = if after == 0 {
                        io::ErrorKind::ConnectionReset
                    } else {
                        io::ErrorKind::PermissionDenied
                    };
                    Ok(stream::iter([Ok(after + 1), Err(io::Error::from(kind))]))
                })
                .resume(0, |after, item: &u64| *after = *item)
                .retry_if(|e: &io::Error| e.kind() == io::ErrorKind::ConnectionReset)
                .name("review4");
            let mut got = vec![];
            while let Some(item) = s.next().await {
                got.push(item.map_err(|e| e.kind()));
            }
            assert_eq!(got, [Ok(1), Ok(2), Err(io::ErrorKind::PermissionDenied)]);
            assert_eq!(s.resumes(), 1);
        });
    });
    let outcomes: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, _, _, _)| k.key().name() == "reattempt.calls")
        .map(|(k, _, _, v)| {
            let outcome = k
                .key()
                .labels()
                .find(|l| l.key() == "reattempt.outcome")
                .unwrap()
                .value()
                .to_owned();
            (outcome, matches!(v, DebugValue::Counter(n) if n == 1))
        })
        .collect();
    assert_eq!(outcomes, [("failed_with_retry".to_owned(), true)]);
}

/// Under a ratio budget every call whose first attempt ends counts as a request
/// (`first_attempt_ended`, "here and nowhere else"), and those requests fund the retries. A
/// stream that opens and ends cleanly never reaches a decision: it deposits nothing, so a
/// service whose streams all succeed has no budget for its streams' resumes.
#[tokio::test(start_paused = true)]
async fn a_clean_stream_counts_as_a_request_under_a_ratio_budget() {
    let policy = policy();
    let call = RetryBudget::ratio(1.0)
        .min_retries_per_second(0.0)
        .build()
        .unwrap();
    policy
        .retry(|| async { Ok::<_, io::Error>(()) })
        .budget(&call)
        .await
        .unwrap();
    assert_eq!(call.available(), 1, "a call deposits one request");

    let streamed = RetryBudget::ratio(1.0)
        .min_retries_per_second(0.0)
        .build()
        .unwrap();
    let items: Vec<_> = policy
        .retry_stream(|after: u64| async move {
            Ok::<_, io::Error>(stream::iter([Ok(after + 1), Ok(after + 2)]))
        })
        .resume(0, |after, item: &u64| *after = *item)
        .budget(&streamed)
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert_eq!(streamed.available(), 1, "a stream is a request too");
}

/// `resumes()` is "how many times the stream was re-opened after its first open", and each
/// resume is a `stream resumed` event and `reattempt.stream.resumes`: counted when the
/// sleep ends, before the breaker is asked, so a resume the breaker turns away counts as one.
#[tokio::test(start_paused = true)]
async fn a_resume_the_breaker_turns_away_is_not_a_resume() {
    let policy = policy();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let mut opens = 0;
    let mut s = policy
        .retry_stream(|_: u64| {
            opens += 1;
            async {
                Err::<stream::Empty<io::Result<u64>>, _>(io::Error::from(
                    io::ErrorKind::ConnectionRefused,
                ))
            }
        })
        .resume(0, |after, item: &u64| *after = *item)
        .circuit_breaker(&breaker);
    let last = s.next().await.unwrap().unwrap_err();
    assert_eq!(
        last.kind(),
        io::ErrorKind::ConnectionRefused,
        "the last failure is kept"
    );
    assert_eq!(s.resumes(), 0, "opened once, never re-opened");
}

/// `opened()` on a stream that has delivered an item panics on the next item
/// ("an item before the stream opened"), and that item is lost though `advance` moved the
/// checkpoint past it.
#[tokio::test(start_paused = true)]
async fn opened_on_a_stream_already_delivering_does_not_panic() {
    let policy = policy();
    let mut s = policy
        .retry_stream(|after: u64| async move {
            Ok::<_, io::Error>(stream::iter([Ok(after + 1), Ok(after + 2)]))
        })
        .resume(0, |after, item: &u64| *after = *item);
    assert_eq!(s.next().await.unwrap().unwrap(), 1);
    let opening = std::panic::AssertUnwindSafe(async move { s.opened().await.map(|_| ()) });
    assert!(
        opening.catch_unwind().await.is_ok(),
        "opened() panicked on item 2"
    );
}

/// `max_attempts` after progress: the attempt that delivered items and then failed is the first
/// of the new schedule, so `max_attempts(2)` allows one open after it that delivers nothing (as a
/// call's first failure leaves one more attempt), and `max_attempts(1)` never re-opens.
#[tokio::test(start_paused = true)]
async fn max_attempts_counts_from_the_attempt_that_delivered() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let mut opens = 0;
    let mut s = policy
        .retry_stream(|after: u64| {
            opens += 1;
            let first = opens == 1;
            async move {
                let reset = io::Error::from(io::ErrorKind::ConnectionReset);
                if first {
                    Ok(stream::iter(vec![Ok(after + 1), Err(reset)]))
                } else {
                    Err(io::Error::from(io::ErrorKind::ConnectionRefused))
                }
            }
        })
        .resume(0, |after, item: &u64| *after = *item);
    let mut got = vec![];
    while let Some(item) = s.next().await {
        got.push(item.map_err(|e| e.kind()));
    }
    drop(s);
    assert_eq!(got, [Ok(1), Err(io::ErrorKind::ConnectionRefused)]);
    assert_eq!(
        opens, 2,
        "the open that delivered (attempt 1), then one that failed (attempt 2)"
    );
}

/// `advance` panics on item 2 (a checkpoint that cannot hold it); the consumer survives the
/// panic (`catch_unwind`, a supervisor that polls again). The stream is then over: never item 3
/// after a lost item 2.
#[tokio::test(start_paused = true)]
async fn a_panicking_advance_does_not_skip_an_item_silently() {
    let policy = policy();
    let mut s = policy
        .retry_stream(|after: u64| async move {
            Ok::<_, io::Error>(stream::iter((after + 1..=3).map(Ok)))
        })
        .resume(0, |after, item: &u64| {
            assert!(*item != 2, "advance refuses item 2");
            *after = *item;
        });
    assert_eq!(s.next().await.unwrap().unwrap(), 1);
    let panicked = std::panic::AssertUnwindSafe(s.next()).catch_unwind().await;
    assert!(panicked.is_err());
    let next = s.next().await.map(|r| r.unwrap());
    assert_eq!(next, None, "over after the panic, not item 3");
}
