//! Frames (`context()`, the inherited deadline, the outer attempts left) under interleavings:
//! `join!`/`select!` of retrying calls, hedged copies, a `#[recover]` fallback making a nested
//! call, outer frames, panics; through the attribute, the closure API and hedged copies. Written
//! by the review of the non-generic frame entry (`Slot`), kept as regression tests.
#![cfg(feature = "http")]

use std::cell::RefCell;
use std::sync::Mutex;
use std::time::Duration;

use reattempt::http::{outer_call, outer_header};
use reattempt::{RetryPolicy, context, recover, retryable};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq)]
enum E {
    Down,
    Timeout,
}
impl From<reattempt::Elapsed> for E {
    fn from(_: reattempt::Elapsed) -> Self {
        E::Timeout
    }
}

/// What `context()` says: attempt, max attempts, key.
type Snap = Option<(u32, u32, String)>;
/// One log line: where, what `context()` said, what the outer-attempts header would say.
type Line = (&'static str, Snap, Option<String>);

fn snap() -> Snap {
    context().map(|c| {
        (
            c.attempt(),
            c.max_attempts(),
            format!("{:?}", c.idempotency_key()),
        )
    })
}

thread_local! {
    static LOG: RefCell<Vec<Line>> = const { RefCell::new(vec![]) };
}
fn log(tag: &'static str) {
    let h = outer_header().map(|v| v.to_str().unwrap().to_owned());
    LOG.with(|l| l.borrow_mut().push((tag, snap(), h)));
}
/// The attempt number and the outer-attempts header of each line logged at `tag`.
fn attempts_and_headers(log: &[Line], tag: &str) -> Vec<(u32, Option<String>)> {
    log.iter()
        .filter(|l| l.0 == tag)
        .map(|l| (l.1.clone().unwrap().0, l.2.clone()))
        .collect()
}

fn take_log() -> Vec<Line> {
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

#[retryable(max_attempts = 3, delay = "5ms", jitter = "none")]
async fn inner(tag: &'static str, fail_until: u32) -> Result<u32, E> {
    log(tag);
    sleep(MS).await;
    log(tag);
    let n = context().unwrap().attempt();
    if n < fail_until { Err(E::Down) } else { Ok(n) }
}

#[retryable(max_attempts = 2, delay = "5ms", jitter = "none")]
async fn outer_nesting() -> Result<u32, E> {
    log("outer-before");
    let v = inner("nested", 2).await?;
    log("outer-after");
    let n = context().unwrap().attempt();
    if n < 2 { Err(E::Down) } else { Ok(v) }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn join_of_two_calls_and_a_nested_one_each_see_their_own_frame() {
    let (a, b) = tokio::join!(inner("a", 3), outer_nesting());
    assert_eq!(a, Ok(3));
    assert_eq!(b, Ok(2));
    assert!(context().is_none());
    assert_eq!(outer_header(), None);
    let log = take_log();
    // Every line inside a call: its own attempt; a's key is one key, different from outer's.
    let a_keys: std::collections::HashSet<_> = log
        .iter()
        .filter(|l| l.0 == "a")
        .map(|l| l.1.clone().unwrap().2)
        .collect();
    assert_eq!(a_keys.len(), 1, "{log:#?}");
    let outer_keys: std::collections::HashSet<_> = log
        .iter()
        .filter(|l| l.0.starts_with("outer"))
        .map(|l| l.1.clone().unwrap().2)
        .collect();
    assert_eq!(outer_keys.len(), 1, "{log:#?}");
    assert!(a_keys.is_disjoint(&outer_keys));
    let a_attempts: Vec<u32> = attempts_and_headers(&log, "a")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(a_attempts, [1, 1, 2, 2, 3, 3], "{log:#?}");
    // nested: outer attempt 1 → nested 1 (fails), 2 (ok); outer attempt 2 → nested 1, 2.
    let nested = attempts_and_headers(&log, "nested");
    assert_eq!(
        nested,
        [
            (1, Some("2".into())),
            (1, Some("2".into())),
            (2, Some("1".into())),
            (2, Some("1".into())),
            (1, Some("2".into())),
            (1, Some("2".into())),
            (2, Some("1".into())),
            (2, Some("1".into())),
        ],
        "{log:#?}"
    );
    let after = attempts_and_headers(&log, "outer-after");
    assert_eq!(after, [(1, Some("1".into())), (2, None)], "{log:#?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_call_dropped_mid_attempt_by_select_leaves_no_frame() {
    tokio::select! {
        _ = inner("slow", 99) => unreachable!(),
        () = sleep(MS / 2) => {}
    }
    assert!(context().is_none());
    assert_eq!(outer_header(), None);
    assert_eq!(inner("after", 1).await, Ok(1));
    let log = take_log();
    assert_eq!(log.last().unwrap().1.as_ref().unwrap().0, 1);
}

#[retryable(max_attempts = 3, hedge_after = "10ms", idempotent = true)]
async fn hedged(took: &[u64]) -> Result<u32, E> {
    let n = context().unwrap().attempt();
    log("copy");
    sleep(Duration::from_millis(took[n as usize - 1])).await;
    log("copy");
    assert_eq!(
        context().unwrap().attempt(),
        n,
        "a copy's number, on every poll"
    );
    Ok(n)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn hedged_copies_each_see_their_own_number_and_the_calls_key() {
    let t0 = Instant::now();
    assert_eq!(hedged(&[100, 100, 5]).await, Ok(3));
    assert!(t0.elapsed() < 30 * MS);
    let log = take_log();
    let keys: std::collections::HashSet<_> = log.iter().map(|l| l.1.clone().unwrap().2).collect();
    assert_eq!(keys.len(), 1, "{log:#?}");
    let headers: Vec<_> = log
        .iter()
        .map(|l| (l.1.clone().unwrap().0, l.2.clone()))
        .collect();
    // copies 1, 2, 3 start; copy 3 ends.
    assert_eq!(headers[0].0, 1);
    assert!(context().is_none());
}

#[recover]
async fn fallback(_e: E) -> Result<u32, E> {
    log("fb-before");
    let r = inner("fb-nested", 2).await;
    log("fb-after");
    r.map(|n| n + 100)
}

#[retryable(max_attempts = 2, delay = "5ms", jitter = "none", recover = fallback)]
async fn recovered() -> Result<u32, E> {
    log("rec");
    Err(E::Down)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_fallback_that_makes_a_retrying_call() {
    assert_eq!(recovered().await, Ok(102));
    let log = take_log();
    let rec_key = log
        .iter()
        .find(|l| l.0 == "rec")
        .unwrap()
        .1
        .clone()
        .unwrap()
        .2;
    for l in log
        .iter()
        .filter(|l| l.0.starts_with("fb-") && l.0 != "fb-nested")
    {
        let (n, max, key) = l.1.clone().unwrap();
        assert_eq!((n, max, &key), (2, 2, &rec_key), "{log:#?}");
        assert_eq!(l.2, None, "a fallback: no attempts left");
    }
    let nested = attempts_and_headers(&log, "fb-nested");
    assert_eq!(
        nested,
        [
            (1, Some("2".into())),
            (1, Some("2".into())),
            (2, Some("1".into())),
            (2, Some("1".into()))
        ]
    );
    assert!(context().is_none());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn outer_frames_with_and_without_attempts_left() {
    assert_eq!(inner("o0", 1).await, Ok(1));
    let r = outer_call(Some(0), inner("o0b", 1)).await;
    assert_eq!(r, Ok(1));
    let r = outer_call(Some(5), inner("o5", 3)).await;
    assert_eq!(r, Ok(3));
    let log = take_log();
    let hs: Vec<_> = log.iter().map(|l| (l.0, l.2.clone())).collect();
    assert_eq!(
        hs,
        [
            ("o0", Some("2".into())),
            ("o0", Some("2".into())),
            ("o0b", Some("2".into())),
            ("o0b", Some("2".into())),
            ("o5", Some("2".into())),
            ("o5", Some("2".into())),
            ("o5", Some("1".into())),
            ("o5", Some("1".into())),
            ("o5", Some("5".into())),
            ("o5", Some("5".into())),
        ]
    );
    assert_eq!(outer_header(), None);
}

#[retryable(max_attempts = 2, delay = "1ms")]
async fn panics() -> Result<u32, E> {
    sleep(MS).await;
    panic!("boom in an attempt");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_panic_in_an_attempt_restores_the_frame() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let h = tokio::task::spawn_local(panics());
            assert!(h.await.is_err());
            assert!(context().is_none());
            assert_eq!(outer_header(), None);
            // inside an attempt, a panicking nested call caught by its task; still our frame
        })
        .await;
    assert_eq!(inner("p", 1).await, Ok(1));
    assert!(context().is_none());
}

#[retryable(max_attempts = 3, delay = "1ms")]
fn blocking_panics() -> Result<u32, E> {
    assert_eq!(context().unwrap().attempt(), 1);
    panic!("boom");
}

#[test]
fn a_blocking_attempt_that_panics_restores_the_frame() {
    let r = std::panic::catch_unwind(blocking_panics);
    assert!(r.is_err());
    assert!(context().is_none());
}

static DEADLINE_SEEN: Mutex<Vec<u32>> = Mutex::new(vec![]);

#[retryable(max_attempts = 100, delay = "10ms", jitter = "none")]
async fn long_inner() -> Result<(), E> {
    DEADLINE_SEEN
        .lock()
        .unwrap()
        .push(context().unwrap().attempt());
    Err(E::Down)
}

#[retryable(max_attempts = 1, max_elapsed = "50ms")]
async fn bounded_outer() -> Result<(), E> {
    long_inner().await
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_inherited_deadline_bounds_the_nested_attribute_call_and_the_closure_call() {
    let t0 = Instant::now();
    let _ = bounded_outer().await;
    let attribute = (t0.elapsed(), DEADLINE_SEEN.lock().unwrap().len());
    let policy = RetryPolicy::builder()
        .max_attempts(1)
        .max_elapsed(50 * MS)
        .build()
        .unwrap();
    DEADLINE_SEEN.lock().unwrap().clear();
    let t0 = Instant::now();
    let _: Result<(), E> = policy.retry(|| async { long_inner().await }).await;
    let closure = (t0.elapsed(), DEADLINE_SEEN.lock().unwrap().len());
    assert!(attribute.0 <= 60 * MS, "{attribute:?}");
    assert_eq!(attribute, closure);
}
