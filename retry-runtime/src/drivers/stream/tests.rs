//! The rules of a resumed stream, on tokio's paused clock, against a scripted source: items
//! once and in order, the schedule across resumes, the idle limit, the deadline, the guards,
//! the fallback and cancellation; and a model-based test over random scripts.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_core::Stream;
use futures_util::{StreamExt, stream};
use tokio::time::Instant;

use crate::{CircuitBreaker, Jitter, RetryBudget, RetryPolicy, transient};

/// What one open of the scripted source does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// The open fails with this error kind.
    Refused(io::ErrorKind),
    /// Gives `n` items, then fails with this error kind.
    Breaks(usize, io::ErrorKind),
    /// Gives `n` items, then nothing, ever.
    Stalls(usize),
    /// Gives every item left, then ends.
    Whole,
}

/// A source of the items `1..=len`, opened from a checkpoint (the last item delivered), doing
/// what its script says at each open; `opens` records the checkpoint of each.
#[derive(Clone)]
struct Source {
    len: u64,
    script: Rc<RefCell<Vec<Open>>>,
    opens: Rc<RefCell<Vec<u64>>>,
    /// Items the source produced, whether delivered or not.
    produced: Rc<RefCell<u64>>,
}

type Items = std::pin::Pin<Box<dyn Stream<Item = io::Result<u64>>>>;

impl Source {
    fn new(len: u64, script: &[Open]) -> Self {
        Source {
            len,
            script: Rc::new(RefCell::new(script.iter().rev().copied().collect())),
            opens: Rc::default(),
            produced: Rc::default(),
        }
    }

    fn open(&self, after: u64) -> impl Future<Output = io::Result<Items>> + use<> {
        self.opens.borrow_mut().push(after);
        let plan = self.script.borrow_mut().pop().unwrap_or(Open::Whole);
        let produced = self.produced.clone();
        let len = self.len;
        async move {
            let items = move |n: usize| {
                let produced = produced.clone();
                stream::iter((after + 1..=len).take(n)).map(move |i| {
                    *produced.borrow_mut() += 1;
                    Ok(i)
                })
            };
            Ok(match plan {
                Open::Refused(kind) => return Err(kind.into()),
                Open::Breaks(n, kind) => items(n)
                    .chain(stream::iter([Err(kind.into())]))
                    .boxed_local(),
                Open::Stalls(n) => items(n).chain(stream::pending()).boxed_local(),
                Open::Whole => items(usize::MAX).boxed_local(),
            })
        }
    }

    fn opens(&self) -> Vec<u64> {
        self.opens.borrow().clone()
    }
}

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(Duration::from_millis(100))
        .multiplier(2.0)
        .max_delay(Duration::from_secs(10))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

/// Everything the stream gives, each `Err` as its kind.
async fn drain(s: impl Stream<Item = io::Result<u64>>) -> Vec<Result<u64, io::ErrorKind>> {
    s.map(|r| r.map_err(|e| e.kind())).collect().await
}

/// Whether the stream has nothing yet (an item it had is lost).
async fn is_pending<S: Stream + Unpin>(s: &mut S) -> bool {
    std::future::poll_fn(|cx| std::task::Poll::Ready(s.poll_next_unpin(cx).is_pending())).await
}

const RESET: io::ErrorKind = io::ErrorKind::ConnectionReset;

#[tokio::test(start_paused = true)]
async fn items_arrive_once_and_in_order_across_resets() {
    let source = Source::new(
        10,
        &[
            Open::Breaks(3, RESET),
            Open::Breaks(2, RESET),
            Open::Breaks(4, RESET),
        ],
    );
    let policy = policy(3);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item);
    let got = drain(s).await;
    assert_eq!(got, (1..=10).map(Ok).collect::<Vec<_>>());
    assert_eq!(
        source.opens(),
        [0, 3, 5, 9],
        "each re-open from the last item delivered"
    );
    assert_eq!(*source.produced.borrow(), 10, "nothing produced twice");
}

#[tokio::test(start_paused = true)]
async fn progress_starts_the_schedule_again() {
    // Three failures in a row with no item between them would exhaust max_attempts = 3; with an
    // item between each, every failure is the first of a new schedule, and waits 100 ms.
    let source = Source::new(
        5,
        &[
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
        ],
    );
    let policy = policy(2);
    let t0 = Instant::now();
    let mut s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item);
    let mut at = vec![];
    while let Some(item) = s.next().await {
        item.unwrap();
        at.push(t0.elapsed().as_millis());
    }
    assert_eq!(
        at,
        [0, 100, 200, 300, 400],
        "each resume waits the first delay"
    );
    assert_eq!(s.resumes(), 4);
}

#[tokio::test(start_paused = true)]
async fn without_progress_resets_the_failures_add_up() {
    let source = Source::new(
        5,
        &[
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
        ],
    );
    let policy = policy(3);
    let t0 = Instant::now();
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .progress_resets(false);
    let got = drain(s).await;
    assert_eq!(
        got,
        [Ok(1), Ok(2), Ok(3), Err(RESET)],
        "the third failure is the last attempt's"
    );
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(300),
        "100 ms, then 200 ms: one schedule"
    );
}

#[tokio::test(start_paused = true)]
async fn failures_without_progress_exhaust_the_attempts() {
    let source = Source::new(
        5,
        &[
            Open::Breaks(2, RESET),
            Open::Refused(RESET),
            Open::Breaks(0, RESET),
            Open::Refused(RESET),
        ],
    );
    let policy = policy(3);
    let t0 = Instant::now();
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item);
    let got = drain(s).await;
    // After the items, a new schedule: attempt 1 broke, 2 refused, 3 broke with nothing: over.
    assert_eq!(got, [Ok(1), Ok(2), Err(RESET)]);
    assert_eq!(source.opens(), [0, 2, 2]);
    assert_eq!(t0.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn an_error_not_retried_is_the_last_item() {
    let source = Source::new(5, &[Open::Breaks(2, io::ErrorKind::PermissionDenied)]);
    let policy = policy(5);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .retry_if(|e| e.kind() == RESET);
    assert_eq!(
        drain(s).await,
        [Ok(1), Ok(2), Err(io::ErrorKind::PermissionDenied)]
    );
    assert_eq!(source.opens(), [0]);
}

#[tokio::test(start_paused = true)]
async fn a_stall_is_a_failure_after_the_idle_limit() {
    let source = Source::new(4, &[Open::Stalls(2)]);
    let policy = policy(3);
    let t0 = Instant::now();
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .idle_timeout(Duration::from_secs(5));
    assert_eq!(drain(s).await, (1..=4).map(Ok).collect::<Vec<_>>());
    assert_eq!(source.opens(), [0, 2]);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(5_100),
        "5 s of silence, then the 100 ms delay"
    );
}

#[tokio::test(start_paused = true)]
async fn the_idle_limit_restarts_with_each_item() {
    // Items every 4 s under a 5 s idle limit never stall.
    let policy = policy(1);
    let opens = std::cell::Cell::new(0);
    let s = policy
        .retry_stream(|(): ()| {
            opens.set(opens.get() + 1);
            async {
                Ok(stream::iter(1..=3u64).then(|i| async move {
                    tokio::time::sleep(Duration::from_secs(4)).await;
                    Ok::<_, io::Error>(i)
                }))
            }
        })
        .resume((), |(), _: &u64| {})
        .idle_timeout(Duration::from_secs(5));
    assert_eq!(drain(s).await, [Ok(1), Ok(2), Ok(3)]);
    assert_eq!(opens.get(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_policy_timeout_bounds_each_open() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .timeout(Duration::from_secs(1))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let opens = std::cell::Cell::new(0u32);
    let t0 = Instant::now();
    let s = policy
        .retry_stream(|(): ()| {
            opens.set(opens.get() + 1);
            let slow = opens.get() == 1;
            async move {
                if slow {
                    std::future::pending::<()>().await;
                }
                // Slower than the open's timeout, but a delivering stream is not cut by it.
                Ok(stream::iter([1u64, 2]).then(|i| async move {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    Ok::<_, io::Error>(i)
                }))
            }
        })
        .resume((), |(), _: &u64| {});
    assert_eq!(drain(s).await, [Ok(1), Ok(2)]);
    assert_eq!(opens.get(), 2);
    assert_eq!(t0.elapsed(), Duration::from_millis(1_000 + 100 + 6_000));
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_bounds_the_whole_stream() {
    let policy = RetryPolicy::builder()
        .max_attempts(10)
        .delay(Duration::from_secs(1))
        .jitter(Jitter::None)
        .max_elapsed(Duration::from_secs(10))
        .build()
        .unwrap();
    // A source that delivers an item every 3 s, forever.
    let t0 = Instant::now();
    let s = policy
        .retry_stream(|after: u64| async move {
            Ok(stream::iter(after + 1..).then(|i| async move {
                tokio::time::sleep(Duration::from_secs(3)).await;
                Ok::<_, io::Error>(i)
            }))
        })
        .resume(0, |after, item: &u64| *after = *item);
    let got = drain(s).await;
    assert_eq!(got, [Ok(1), Ok(2), Ok(3), Err(io::ErrorKind::TimedOut)]);
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(10),
        "ended at the deadline, not resumed"
    );
}

#[tokio::test(start_paused = true)]
async fn the_budget_pays_for_each_resume_and_an_item_pays_it_back() {
    let budget = RetryBudget::builder()
        .max_tokens(10)
        .initial_tokens(10)
        .retry_cost(5)
        .success_deposit(0)
        .build()
        .unwrap();
    let source = Source::new(
        6,
        &[
            Open::Breaks(1, RESET),
            Open::Refused(RESET),
            Open::Refused(RESET),
            Open::Breaks(0, RESET),
        ],
    );
    let policy = policy(10);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .budget(&budget);
    // Resume 1 and 2 take the 10 tokens; the third cannot be paid: the stream ends.
    assert_eq!(drain(s).await, [Ok(1), Err(RESET)]);
    assert_eq!(source.opens(), [0, 1, 1]);
    assert_eq!(budget.available(), 0);

    let budget = RetryBudget::builder()
        .max_tokens(10)
        .initial_tokens(5)
        .retry_cost(5)
        .success_deposit(0)
        .build()
        .unwrap();
    let source = Source::new(
        3,
        &[
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
            Open::Breaks(1, RESET),
        ],
    );
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .budget(&budget);
    // Each resume is paid back by its first item: 5 tokens carry the stream through 3 resets.
    assert_eq!(drain(s).await, [Ok(1), Ok(2), Ok(3)]);
    assert_eq!(budget.available(), 5);
}

#[tokio::test(start_paused = true)]
async fn the_breaker_hears_each_attempt_and_can_end_the_stream() {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let source = Source::new(
        5,
        &[
            Open::Breaks(1, RESET),
            Open::Refused(RESET),
            Open::Refused(RESET),
        ],
    );
    let policy = policy(10);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .circuit_breaker(&breaker);
    // The first attempt delivered (a success); two refused opens open the breaker, which turns
    // the next resume away: the stream ends with the last real error, not the rejection.
    assert_eq!(drain(s).await, [Ok(1), Err(RESET)]);
    assert_eq!(source.opens(), [0, 1, 1]);
    assert_eq!(breaker.state(), crate::BreakerState::Open);

    // An open breaker turns the first open away: the rejection is the stream's error.
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .circuit_breaker(&breaker);
    let got: Vec<_> = s.collect().await;
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].as_ref().unwrap_err().kind(),
        io::ErrorKind::Other,
        "BreakerOpen as io::Error"
    );
    assert_eq!(source.opens().len(), 3, "nothing opened");
}

#[tokio::test(start_paused = true)]
async fn a_half_open_probe_dropped_while_opening_goes_back() {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(1))
        .half_open_probes(1)
        .build()
        .unwrap();
    breaker.record(breaker.try_acquire().unwrap(), false);
    tokio::time::advance(Duration::from_secs(2)).await;
    let policy = policy(3);
    let mut s = policy
        .retry_stream(|(): ()| async {
            std::future::pending::<io::Result<stream::Empty<io::Result<u8>>>>().await
        })
        .resume((), |(), _: &u8| {})
        .circuit_breaker(&breaker);
    assert!(is_pending(&mut s).await, "the probe's open is in flight");
    assert!(breaker.try_acquire().is_err(), "its permit is held");
    drop(s);
    assert!(
        breaker.try_acquire().is_ok(),
        "dropped: the permit went back"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fallback_continues_from_the_last_item() {
    let source = Source::new(10, &[Open::Breaks(4, io::ErrorKind::PermissionDenied)]);
    let policy = policy(3);
    let checkpoints = Rc::new(RefCell::new(vec![]));
    let seen = checkpoints.clone();
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .retry_if(|e| e.kind() == RESET)
        .recover(move |e: io::Error, after: u64| {
            seen.borrow_mut().push((e.kind(), after));
            async move { Ok(stream::iter((after + 1..=6).map(Ok))) }
        });
    assert_eq!(drain(s).await, (1..=6).map(Ok).collect::<Vec<_>>());
    assert_eq!(
        *checkpoints.borrow(),
        [(io::ErrorKind::PermissionDenied, 4)]
    );
}

#[tokio::test(start_paused = true)]
async fn opened_returns_an_open_that_failed_or_the_fallback_stream() {
    let source = Source::new(3, &[Open::Refused(RESET), Open::Refused(RESET)]);
    let policy = policy(2);
    let err = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .opened()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), RESET);
    assert_eq!(source.opens(), [0, 0]);

    let source = Source::new(3, &[Open::Refused(RESET), Open::Refused(RESET)]);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .recover(|_, _| async { Ok(stream::iter([Ok(42)])) })
        .opened()
        .await
        .unwrap();
    assert_eq!(drain(s).await, [Ok(42)]);

    let source = Source::new(3, &[Open::Breaks(1, RESET)]);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .opened()
        .await
        .unwrap();
    assert_eq!(source.opens(), [0], "opened, and nothing read yet");
    assert_eq!(drain(s).await, [Ok(1), Ok(2), Ok(3)]);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_drops_the_source() {
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let policy = policy(3);
    let counter = dropped.clone();
    let mut s = policy
        .retry_stream(move |(): ()| {
            let guard = Guard(counter.clone());
            async move {
                Ok(stream::iter([Ok::<u8, io::Error>(1)])
                    .chain(stream::pending())
                    .map(move |i| {
                        let _held = &guard;
                        i
                    }))
            }
        })
        .resume((), |(), _: &u8| {});
    assert_eq!(s.next().await.unwrap().unwrap(), 1);
    assert!(is_pending(&mut s).await);
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    drop(s);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the source went with the stream"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_outcome_ends_a_stream_said_not_idempotent() {
    let source = Source::new(5, &[Open::Breaks(2, RESET)]);
    let policy = policy(3);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .retry_if(transient)
        .idempotent(false);
    assert_eq!(drain(s).await, [Ok(1), Ok(2), Err(RESET)]);
    // By default a stream is a read, safe to re-open.
    let source = Source::new(5, &[Open::Breaks(2, RESET)]);
    let s = policy
        .retry_stream(|after| source.open(after))
        .resume(0, |after, item: &u64| *after = *item)
        .retry_if(transient);
    assert_eq!(drain(s).await, (1..=5).map(Ok).collect::<Vec<_>>());
}

mod model {
    //! Random scripts against a model: the consumer sees `1..=len` once and in order, or a
    //! prefix of it then the error the rules say; the opens start where the model says.

    use proptest::prelude::*;

    use super::*;

    fn open() -> impl Strategy<Value = Open> {
        prop_oneof![
            Just(Open::Refused(RESET)),
            (0..4usize).prop_map(|n| Open::Breaks(n, RESET)),
            (0..4usize).prop_map(|n| Open::Breaks(n, io::ErrorKind::PermissionDenied)),
            (0..4usize).prop_map(Open::Stalls),
            Just(Open::Whole),
        ]
    }

    /// What the rules say of a script: the items, the last error, the opens' checkpoints.
    fn model(
        len: u64,
        script: &[Open],
        max_attempts: u32,
        resets: bool,
    ) -> (Vec<Result<u64, io::ErrorKind>>, Vec<u64>) {
        let (mut out, mut opens, mut after, mut failures) = (vec![], vec![], 0u64, 0u32);
        let mut plans = script.iter().copied().chain(std::iter::repeat(Open::Whole));
        loop {
            opens.push(after);
            let (n, end) = match plans.next().unwrap() {
                Open::Refused(kind) => (0, Some(kind)),
                Open::Breaks(n, kind) => (n, Some(kind)),
                Open::Stalls(n) => (n, Some(io::ErrorKind::TimedOut)),
                Open::Whole => (usize::MAX, None),
            };
            let given = (len - after).min(n as u64);
            out.extend((after + 1..=after + given).map(Ok));
            after += given;
            let Some(kind) = end else {
                return (out, opens);
            };
            if given > 0 && resets {
                failures = 0;
            }
            failures += 1;
            if kind == io::ErrorKind::PermissionDenied || failures >= max_attempts {
                out.push(Err(kind));
                return (out, opens);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, ..ProptestConfig::default() })]
        #[test]
        fn the_stream_follows_the_model(len in 0..12u64, script in prop::collection::vec(open(), 0..8), max_attempts in 1..5u32, resets: bool) {
            let (want, want_opens) = model(len, &script, max_attempts, resets);
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            let (got, opens) = rt.block_on(async {
                let source = Source::new(len, &script);
                let policy = policy(max_attempts);
                let s = policy
                    .retry_stream(|after| source.open(after))
                    .resume(0, |after, item: &u64| *after = *item)
                    .retry_if(|e| e.kind() != io::ErrorKind::PermissionDenied)
                    .idle_timeout(Duration::from_secs(1))
                    .progress_resets(resets);
                (drain(s).await, source.opens())
            });
            prop_assert_eq!(got, want);
            prop_assert_eq!(opens, want_opens);
        }
    }
}

#[test]
fn a_stream_of_send_parts_is_send_and_unpin() {
    fn send_unpin<T: Send + Unpin>(_: &T) {}
    let policy = policy(3);
    let breaker = CircuitBreaker::builder().build().unwrap();
    let s = policy
        .retry_stream(|after: u64| async move { Ok::<_, io::Error>(stream::iter([Ok(after + 1)])) })
        .resume(0, |after, item: &u64| *after = *item)
        .circuit_breaker(&breaker)
        .idle_timeout(Duration::from_secs(1))
        .recover(|_, after| async move { Ok(stream::iter([Ok(after)])) });
    send_unpin(&s);
}

#[tokio::test(start_paused = true)]
async fn the_idle_limit_bounds_an_open_that_never_answers() {
    // No policy timeout: the idle limit alone cuts an open whose server accepted the
    // connection and never answered (a resume's headers that never come).
    let policy = policy(3);
    let opens = std::cell::Cell::new(0u32);
    let t0 = Instant::now();
    let s = policy
        .retry_stream(|after: u64| {
            opens.set(opens.get() + 1);
            let hang = opens.get() == 1;
            async move {
                if hang {
                    std::future::pending::<()>().await;
                }
                Ok::<_, io::Error>(stream::iter((after + 1..=2).map(Ok)))
            }
        })
        .resume(0, |after, item: &u64| *after = *item)
        .idle_timeout(Duration::from_secs(5));
    assert_eq!(drain(s).await, [Ok(1), Ok(2)]);
    assert_eq!(opens.get(), 2);
    assert_eq!(t0.elapsed(), Duration::from_millis(5_100));
}
