//! The tower layer's behaviour under tokio's paused clock: what a call sends, when, and what it
//! returns, for each setting the attribute also has.
#![cfg(feature = "tower")]

use std::future::{Future, poll_fn};
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use retry_runtime::tower::RetryLayer;
use retry_runtime::{
    AdaptiveThrottle, BreakerOpen, BreakerState, Bulkhead, BulkheadFull, CircuitBreaker, Elapsed,
    Jitter, RetryBudget, RetryPolicy, Throttled,
};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

#[derive(Debug, Clone, PartialEq)]
enum Fail {
    Busy,
    Bad,
    TimedOut,
    Rejected,
    Shed,
    Full,
}

impl From<Throttled> for Fail {
    fn from(_: Throttled) -> Self {
        Fail::Shed
    }
}

impl From<BulkheadFull> for Fail {
    fn from(_: BulkheadFull) -> Self {
        Fail::Full
    }
}

impl From<Elapsed> for Fail {
    fn from(_: Elapsed) -> Self {
        Fail::TimedOut
    }
}

impl From<BreakerOpen> for Fail {
    fn from(_: BreakerOpen) -> Self {
        Fail::Rejected
    }
}

/// What the scripted service saw of one attempt: when (ms since the start), the request,
/// `context().attempt()` and the call's key.
type Seen = (u64, String, u32, Option<u128>);

/// The outcomes still to play, each after so many ms, last first.
type Script = Arc<Mutex<Vec<(u64, Result<u32, Fail>)>>>;

/// A service that plays a script of outcomes, each after a delay, and records every call.
/// `poll_ready` answers `Pending` once before each `Ready` (waking at once), and is counted.
#[derive(Clone)]
struct Scripted {
    t0: Instant,
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
    ready_polls: Arc<AtomicU32>,
    ready_once: bool,
}

impl Scripted {
    fn new(script: Vec<(u64, Result<u32, Fail>)>) -> Self {
        Scripted {
            t0: Instant::now(),
            script: Arc::new(Mutex::new(script.into_iter().rev().collect())),
            seen: Arc::default(),
            ready_polls: Arc::default(),
            ready_once: false,
        }
    }
}

impl Service<String> for Scripted {
    type Response = u32;
    type Error = Fail;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<u32, Fail>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Fail>> {
        self.ready_polls.fetch_add(1, Ordering::SeqCst);
        if self.ready_once {
            Poll::Ready(Ok(()))
        } else {
            self.ready_once = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    fn call(&mut self, req: String) -> Self::Future {
        assert!(self.ready_once, "called before poll_ready said Ready");
        self.ready_once = false;
        let ctx = retry_runtime::context();
        let at = u64::try_from(self.t0.elapsed().as_millis()).unwrap();
        self.seen.lock().unwrap().push((
            at,
            req,
            ctx.map_or(0, |c| c.attempt()),
            ctx.map(|c| c.idempotency_key().as_u128()),
        ));
        let (after, out) = self
            .script
            .lock()
            .unwrap()
            .pop()
            .expect("script long enough");
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(after)).await;
            out
        })
    }
}

fn policy(attempts: u32) -> retry_runtime::RetryPolicyBuilder {
    RetryPolicy::builder()
        .max_attempts(attempts)
        .delay(Duration::from_millis(100))
        .jitter(Jitter::None)
}

async fn call<S: Service<String>>(svc: &mut S, req: &str) -> Result<S::Response, S::Error> {
    poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req.to_owned()).await
}

#[tokio::test(start_paused = true)]
async fn errors_are_retried_with_the_schedule_in_the_calls_context() {
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)), (0, Err(Fail::Busy)), (0, Ok(7))]);
    let seen = inner.seen.clone();
    let ready = inner.ready_polls.clone();
    let mut svc = RetryLayer::new(policy(3).build().unwrap()).layer(inner);
    assert_eq!(call(&mut svc, "charge").await, Ok(7));
    let seen = seen.lock().unwrap().clone();
    // 100 ms, then 200 ms; each attempt a fresh copy of the request, in the call's context.
    let times: Vec<_> = seen.iter().map(|s| (s.0, s.1.as_str(), s.2)).collect();
    assert_eq!(
        times,
        [(0, "charge", 1), (100, "charge", 2), (300, "charge", 3)]
    );
    assert!(
        seen.iter().all(|s| s.3.is_some() && s.3 == seen[0].3),
        "one key per call"
    );
    // poll_ready asked before each attempt (Pending once, then Ready): 2 polls per attempt,
    // the first pair through the layer's own poll_ready.
    assert_eq!(ready.load(Ordering::SeqCst), 6);
}

#[tokio::test(start_paused = true)]
async fn retry_if_decides_which_errors_are_retried() {
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)), (0, Err(Fail::Bad)), (0, Ok(1))]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(policy(3).build().unwrap())
        .retry_if(|e: &Fail| *e == Fail::Busy)
        .layer(inner);
    assert_eq!(call(&mut svc, "x").await, Err(Fail::Bad));
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn ok_responses_are_retried_with_their_hint_and_the_last_is_returned() {
    // 1503 stands for a 503 response, its hint 250 ms (above the 100 ms delay).
    let inner = Scripted::new(vec![(0, Ok(1503)), (0, Ok(1503)), (0, Ok(1503))]);
    let seen = inner.seen.clone();
    let retries = Arc::new(Mutex::new(vec![]));
    let log = retries.clone();
    let mut svc = RetryLayer::new(policy(3).build().unwrap())
        .retry_if_ok(|v: &u32| *v >= 1000)
        .retry_after_ok(|v: &u32| (*v == 1503).then_some(Duration::from_millis(250)))
        .on_retry(move |e: &Fail, _: &retry_runtime::RetryContext, d| {
            log.lock().unwrap().push((e.clone(), d));
        })
        .layer(inner);
    let start = Instant::now();
    assert_eq!(call(&mut svc, "x").await, Ok(1503));
    let times: Vec<_> = seen.lock().unwrap().iter().map(|s| s.0).collect();
    // 250 (the hint beats 100), then 250 (the hint beats... 200 ms): a floor, not a replacement.
    assert_eq!(times, [0, 250, 500]);
    assert_eq!(start.elapsed(), Duration::from_millis(500));
    assert!(
        retries.lock().unwrap().is_empty(),
        "on_retry is called after errors only"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_attempt_is_cut_by_the_timeout_and_retried() {
    let inner = Scripted::new(vec![(10_000, Ok(1)), (10, Ok(2))]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(
        policy(2)
            .timeout(Duration::from_millis(50))
            .idempotent(true)
            .build()
            .unwrap(),
    )
    .layer(inner);
    assert_eq!(call(&mut svc, "x").await, Ok(2));
    let times: Vec<_> = seen.lock().unwrap().iter().map(|s| s.0).collect();
    assert_eq!(times, [0, 150]);
}

#[tokio::test(start_paused = true)]
async fn timeouts_exhausted_give_the_elapsed_error() {
    let inner = Scripted::new(vec![(10_000, Ok(1)), (10_000, Ok(2))]);
    let mut svc = RetryLayer::new(
        policy(2)
            .timeout(Duration::from_millis(50))
            .build()
            .unwrap(),
    )
    .layer(inner);
    assert_eq!(call(&mut svc, "x").await, Err(Fail::TimedOut));
}

/// A timed-out attempt is a failure of the dependency even when the call does not retry
/// timeouts: the breaker counts it (the attempt's limit tells the engine it timed out).
#[tokio::test(start_paused = true)]
async fn a_timeout_not_retried_is_a_breaker_failure() {
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(1)
            .reset_timeout(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    let mut svc = RetryLayer::new(
        policy(3)
            .timeout(Duration::from_millis(50))
            .build()
            .unwrap(),
    )
    .retry_if(|e: &Fail| *e != Fail::TimedOut)
    .circuit_breaker(breaker.clone())
    .layer(Scripted::new(vec![(10_000, Ok(1))]));
    assert_eq!(call(&mut svc, "x").await, Err(Fail::TimedOut));
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_rejects_without_calling() {
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(2)
            .reset_timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    );
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)), (0, Err(Fail::Busy))]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(policy(5).build().unwrap())
        .circuit_breaker(breaker.clone())
        .layer(inner);
    // Two failures open it; the third attempt is rejected, not retried, and the call ends with
    // the last real error (a rejected retry, as a refused budget); a call it rejects at once
    // ends with the rejection.
    assert_eq!(call(&mut svc, "x").await, Err(Fail::Busy));
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(call(&mut svc, "y").await, Err(Fail::Rejected));
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn each_guards_rejection_takes_the_conversion_given_after_it() {
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(1)
            .build()
            .unwrap(),
    );
    let permit = breaker.try_acquire().unwrap();
    breaker.record(permit, false); // open
    let mut svc = RetryLayer::new(policy(3).build().unwrap())
        .circuit_breaker(breaker)
        .breaker_open_into(|_| Fail::Full)
        .layer(Scripted::new(vec![]));
    assert_eq!(
        call(&mut svc, "x").await,
        Err(Fail::Full),
        "not `From<BreakerOpen>`'s"
    );

    let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(1).build().unwrap());
    let _held = bulkhead.try_acquire().unwrap();
    let mut svc = RetryLayer::new(policy(3).build().unwrap())
        .bulkhead(bulkhead.clone())
        .bulkhead_full_into(|_| Fail::Shed)
        .layer(Scripted::new(vec![]));
    assert_eq!(
        call(&mut svc, "x").await,
        Err(Fail::Shed),
        "not `From<BulkheadFull>`'s"
    );
}

#[tokio::test(start_paused = true)]
async fn the_budget_pays_for_retries_and_stops_them() {
    let budget = Arc::new(
        RetryBudget::builder()
            .max_tokens(10)
            .retry_cost(5)
            .build()
            .unwrap(),
    );
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)); 4]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(policy(5).build().unwrap())
        .budget(budget.clone())
        .layer(inner);
    assert_eq!(call(&mut svc, "x").await, Err(Fail::Busy));
    // Two retries paid (10 tokens); the third cannot be.
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert_eq!(budget.available(), 0);
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_bounds_the_sleeps() {
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)); 5]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(
        policy(5)
            .max_elapsed(Duration::from_millis(250))
            .build()
            .unwrap(),
    )
    .layer(inner);
    assert_eq!(call(&mut svc, "x").await, Err(Fail::Busy));
    // 0, 100; the next sleep (200 ms) would end at 300 ≥ 250.
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn the_future_is_send_when_the_service_is() {
    fn send<T: Send>(_: &T) {}
    let mut svc = RetryLayer::new(policy(2).build().unwrap()).layer(Scripted::new(vec![]));
    let fut = svc.call("x".into());
    send(&fut);
}

/// A service that is ready once, answers that call with a reset, and is never ready again:
/// a `poll_ready` error is the attempt's error.
#[derive(Clone)]
struct ReadyOnce(Arc<AtomicU32>, Arc<AtomicU32>);

impl Service<String> for ReadyOnce {
    type Response = ();
    type Error = io::Error;
    type Future = std::future::Ready<io::Result<()>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            Poll::Ready(Ok(()))
        } else {
            Poll::Ready(Err(io::ErrorKind::ConnectionRefused.into()))
        }
    }
    fn call(&mut self, _: String) -> Self::Future {
        self.1.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Err(io::ErrorKind::ConnectionReset.into()))
    }
}

/// tower's contract: a service whose `poll_ready` returned an error has failed and must not be
/// polled again. The layer ends the call with that error, as tower's own `Retry` does (issue 16,
/// finding 3: it used to ask `poll_ready` again for each later attempt).
#[tokio::test(start_paused = true)]
async fn a_poll_ready_error_ends_the_call_and_is_not_polled_again() {
    let (polls, calls) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let mut svc = RetryLayer::new(policy(5).build().unwrap())
        .without_timeout()
        .layer(ReadyOnce(polls.clone(), calls.clone()));
    let t0 = Instant::now();
    let out = call(&mut svc, "x").await;
    assert_eq!(out.unwrap_err().kind(), io::ErrorKind::ConnectionRefused);
    // The caller's poll_ready readied the first attempt; the second asked once, got an error,
    // and the call ended there: no backoff, no third poll_ready.
    assert_eq!(polls.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(100),
        "one backoff, before attempt 2"
    );
}

#[cfg(feature = "http")]
mod http {
    use super::*;
    use ::http::{Request, Response, StatusCode, header::RETRY_AFTER};

    type Sent = Arc<Mutex<Vec<(u64, Option<String>)>>>;
    /// Statuses still to answer, with their Retry-After seconds.
    type StatusScript = Arc<Mutex<Vec<(u16, Option<u64>)>>>;

    /// An HTTP service answering with the scripted statuses (and Retry-After seconds).
    #[derive(Clone)]
    struct Statuses {
        t0: Instant,
        script: StatusScript,
        sent: Sent,
    }

    impl Service<Request<String>> for Statuses {
        type Response = Response<String>;
        type Error = io::Error;
        type Future = std::future::Ready<io::Result<Response<String>>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, req: Request<String>) -> Self::Future {
            let key = req
                .headers()
                .get("idempotency-key")
                .map(|v| v.to_str().unwrap().to_owned());
            let at = u64::try_from(self.t0.elapsed().as_millis()).unwrap();
            self.sent.lock().unwrap().push((at, key));
            let (status, after) = self.script.lock().unwrap().remove(0);
            let mut resp = Response::new(req.into_body());
            *resp.status_mut() = StatusCode::from_u16(status).unwrap();
            if let Some(s) = after {
                resp.headers_mut()
                    .insert(RETRY_AFTER, s.to_string().parse().unwrap());
            }
            std::future::ready(Ok(resp))
        }
    }

    fn statuses(script: Vec<(u16, Option<u64>)>) -> (Statuses, Sent) {
        let sent = Sent::default();
        let svc = Statuses {
            t0: Instant::now(),
            script: Arc::new(Mutex::new(script)),
            sent: sent.clone(),
        };
        (svc, sent)
    }

    fn post() -> Request<String> {
        Request::post("http://pay.example/charge")
            .body("{}".into())
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn transient_statuses_are_retried_after_their_retry_after_with_one_key() {
        let (inner, sent) = statuses(vec![(503, None), (429, Some(2)), (200, None)]);
        let mut svc = RetryLayer::new(policy(4).max_delay(Duration::from_secs(5)).build().unwrap())
            .http()
            .idempotency_key_header()
            .layer(inner);
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        let resp = svc.call(post()).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.body(), "{}", "each attempt sends the whole body");
        let sent = sent.lock().unwrap().clone();
        let times: Vec<_> = sent.iter().map(|s| s.0).collect();
        assert_eq!(
            times,
            [0, 100, 2100],
            "the 429's Retry-After (2 s) beats the 200 ms delay"
        );
        assert!(sent[0].1.as_ref().is_some_and(|k| k.len() >= 32));
        assert!(
            sent.iter().all(|s| s.1 == sent[0].1),
            "one Idempotency-Key for the call"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_error_is_sent_once_and_returned() {
        let (inner, sent) = statuses(vec![(400, None)]);
        let mut svc = RetryLayer::new(policy(4).build().unwrap())
            .http()
            .layer(inner);
        let resp = svc.call(post()).await.unwrap();
        assert_eq!(resp.status(), 400);
        assert_eq!(sent.lock().unwrap().len(), 1);
        assert_eq!(
            sent.lock().unwrap()[0].1,
            None,
            "no key header unless asked"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_transient_response_is_returned_when_attempts_run_out() {
        // A POST whose 503 may come after the server acted is sent again only with a key.
        let (inner, sent) = statuses(vec![(503, None), (502, None)]);
        let mut svc = RetryLayer::new(policy(2).build().unwrap())
            .http()
            .idempotency_key_header()
            .layer(inner);
        assert_eq!(svc.call(post()).await.unwrap().status(), 502);
        assert_eq!(sent.lock().unwrap().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_beyond_max_delay_returns_the_response_at_once() {
        let (inner, sent) = statuses(vec![(429, Some(60))]);
        let mut svc = RetryLayer::new(policy(4).max_delay(Duration::from_secs(5)).build().unwrap())
            .http()
            .layer(inner);
        let start = Instant::now();
        assert_eq!(svc.call(post()).await.unwrap().status(), 429);
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert_eq!(sent.lock().unwrap().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_the_caller_set_is_kept() {
        let (inner, sent) = statuses(vec![(503, None), (200, None)]);
        let mut svc = RetryLayer::new(policy(2).build().unwrap())
            .http()
            .idempotency_key_header()
            .layer(inner);
        let mut req = post();
        req.headers_mut()
            .insert("idempotency-key", "mine".parse().unwrap());
        svc.call(req).await.unwrap();
        let keys: Vec<_> = sent.lock().unwrap().iter().map(|s| s.1.clone()).collect();
        assert_eq!(keys, [Some("mine".to_owned()), Some("mine".to_owned())]);
    }
}

#[tokio::test(start_paused = true)]
async fn a_throttle_hears_each_attempt_and_sheds_when_the_service_refuses() {
    let throttle = Arc::new(AdaptiveThrottle::builder().build().unwrap());
    // A service that accepted what it was sent: nothing is shed.
    for _ in 0..10 {
        throttle.try_acquire().unwrap();
        throttle.record(true);
    }
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)), (0, Ok(7))]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(policy(3).build().unwrap())
        .throttle(throttle.clone())
        .layer(inner);
    assert_eq!(call(&mut svc, "x").await, Ok(7));
    assert_eq!(
        throttle.counts(),
        (12, 11),
        "two requests, the second accepted"
    );
    // Then everyone's requests are refused: the throttle sheds nearly all.
    retry_runtime::seed_rng(3);
    for _ in 0..10_000 {
        let _ = throttle.try_acquire();
    }
    assert_eq!(call(&mut svc, "x").await, Err(Fail::Shed));
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "the shed attempt is not sent"
    );
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_slot_is_held_for_the_whole_call_and_a_full_one_turns_calls_away() {
    static BULKHEAD: std::sync::LazyLock<Bulkhead> =
        std::sync::LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
    let bulkhead: &'static Bulkhead = &BULKHEAD;
    let inner = Scripted::new(vec![(0, Err(Fail::Busy)), (0, Ok(7))]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(policy(2).build().unwrap())
        .bulkhead(bulkhead)
        .layer(inner);
    let mut other = svc.clone();
    let (out, turned_away) = tokio::join!(call(&mut svc, "x"), async {
        // While the first call sleeps before its retry, it holds the only slot.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(bulkhead.in_flight(), 1);
        call(&mut other, "y").await
    });
    assert_eq!(out, Ok(7));
    assert_eq!(turned_away, Err(Fail::Full), "never retried");
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "nothing sent for the call turned away"
    );
    assert_eq!(bulkhead.in_flight(), 0, "freed when the call ends");
}

#[tokio::test(start_paused = true)]
async fn a_call_waits_for_a_bulkhead_slot_up_to_max_wait() {
    let bulkhead = Arc::new(
        Bulkhead::builder()
            .max_concurrent(1)
            .max_wait(Duration::from_millis(100))
            .build()
            .unwrap(),
    );
    let inner = Scripted::new(vec![(0, Ok(1)), (0, Ok(2))]);
    let mut svc = RetryLayer::new(policy(1).build().unwrap())
        .bulkhead(bulkhead.clone())
        .layer(inner);
    let held = bulkhead.try_acquire().unwrap();
    let start = Instant::now();
    let (out, ()) = tokio::join!(call(&mut svc, "x"), async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(held);
    });
    assert_eq!(out, Ok(1));
    assert_eq!(start.elapsed(), Duration::from_millis(30));
    let _held = bulkhead.try_acquire().unwrap();
    assert_eq!(call(&mut svc, "x").await, Err(Fail::Full));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(130),
        "waited max_wait"
    );
}

#[tokio::test(start_paused = true)]
async fn with_one_layer_a_call_nested_in_a_retrying_call_leaves_the_retries_to_it() {
    let script = (0..10).map(|_| (0, Err(Fail::Busy))).collect();
    let inner = Scripted::new(script);
    let seen = inner.seen.clone();
    let svc = RetryLayer::new(policy(3).one_layer(true).build().unwrap()).layer(inner);
    let outer = policy(3).build().unwrap();
    let out = outer
        .retry(|| {
            let mut svc = svc.clone();
            async move { call(&mut svc, "x").await }
        })
        .without_timeout()
        .await;
    assert_eq!(out, Err(Fail::Busy));
    // One attempt under each of the outer call's first two attempts, three under its last.
    assert_eq!(seen.lock().unwrap().len(), 5);
}

/// Issue 25, finding 3: a nested call waiting for a bulkhead slot never outlives its caller
/// (`max_elapsed = 300ms`), though the bulkhead would let it wait 10 s. Timed (a `timeout`), its
/// attempt cannot be made once the deadline is reached: it ends as a spent deadline does, with
/// the timeout's error; untimed, it is turned away. The service is never called.
#[tokio::test(start_paused = true)]
async fn a_nested_call_waiting_for_a_slot_ends_at_its_callers_deadline() {
    let bulkhead = Arc::new(
        Bulkhead::builder()
            .max_concurrent(1)
            .max_wait(Duration::from_secs(10))
            .build()
            .unwrap(),
    );
    let _held = bulkhead.try_acquire().unwrap();
    let outer = policy(1)
        .max_elapsed(Duration::from_millis(300))
        .build()
        .unwrap();
    for (timeout, expected) in [
        (Some(Duration::from_secs(1)), Fail::TimedOut),
        (None, Fail::Full),
    ] {
        let inner = Scripted::new(vec![(0, Ok(1))]);
        let seen = inner.seen.clone();
        let mut p = policy(3);
        if let Some(t) = timeout {
            p = p.timeout(t);
        }
        let svc = RetryLayer::new(p.build().unwrap())
            .bulkhead(bulkhead.clone())
            .layer(inner);
        let start = Instant::now();
        let out = outer
            .retry(|| {
                let mut svc = svc.clone();
                async move { call(&mut svc, "x").await }
            })
            .without_timeout()
            .await;
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(300),
            "waited past the caller's deadline ({timeout:?})"
        );
        assert_eq!(out, Err(expected));
        assert!(seen.lock().unwrap().is_empty(), "sent without a slot");
    }
}

/// Hedging (`hedge_after`): the closure driver's loop, each copy on its own clone of the
/// service, which it asks `poll_ready` first.
mod hedging {
    use super::*;
    use retry_runtime::{BreakerState, HedgeAfter};

    /// Counts the attempts in flight: each call's future holds one.
    struct Live(Arc<AtomicU32>);

    impl Drop for Live {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// One call as [`Copies`] saw it: ms since the start, `context().attempt()`, the key.
    type CopySeen = (u64, u32, Option<u128>);

    /// A service playing a script of (delay ms, outcome) in call order, recording each call
    /// (ms, `context().attempt()`, key); `poll_ready` is counted, and fails from its
    /// `fail_from`-th poll on (counting every clone's).
    #[derive(Clone)]
    struct Copies {
        t0: Instant,
        script: Script,
        seen: Arc<Mutex<Vec<CopySeen>>>,
        ready_polls: Arc<AtomicU32>,
        live: Arc<AtomicU32>,
        fail_from: u32,
    }

    impl Copies {
        fn new(script: Vec<(u64, Result<u32, Fail>)>) -> Self {
            Copies {
                t0: Instant::now(),
                // `Script` plays its last entry first.
                script: Arc::new(Mutex::new(script.into_iter().rev().collect())),
                seen: Arc::default(),
                ready_polls: Arc::default(),
                live: Arc::default(),
                fail_from: u32::MAX,
            }
        }

        fn seen(&self) -> Vec<CopySeen> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl Service<String> for Copies {
        type Response = u32;
        type Error = Fail;
        type Future = std::pin::Pin<Box<dyn Future<Output = Result<u32, Fail>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Fail>> {
            let n = self.ready_polls.fetch_add(1, Ordering::SeqCst) + 1;
            if n >= self.fail_from {
                Poll::Ready(Err(Fail::Bad))
            } else {
                Poll::Ready(Ok(()))
            }
        }

        fn call(&mut self, _: String) -> Self::Future {
            let ctx = retry_runtime::context();
            let at = u64::try_from(self.t0.elapsed().as_millis()).unwrap();
            self.seen.lock().unwrap().push((
                at,
                ctx.map_or(0, |c| c.attempt()),
                ctx.map(|c| c.idempotency_key().as_u128()),
            ));
            let (after, out) = self
                .script
                .lock()
                .unwrap()
                .pop()
                .expect("script long enough");
            self.live.fetch_add(1, Ordering::SeqCst);
            let live = Live(self.live.clone());
            Box::pin(async move {
                let _live = live;
                tokio::time::sleep(Duration::from_millis(after)).await;
                out
            })
        }
    }

    fn hedged(attempts: u32, after_ms: u64) -> RetryPolicy {
        policy(attempts)
            .idempotent(true)
            .hedge_after(HedgeAfter::Fixed(Duration::from_millis(after_ms)))
            .build()
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_attempt_is_hedged_on_a_clone_and_the_first_answer_wins() {
        let inner = Copies::new(vec![(1000, Ok(1)), (10, Ok(2))]);
        let mut svc = RetryLayer::new(hedged(3, 50)).layer(inner.clone());
        let t0 = Instant::now();
        assert_eq!(call(&mut svc, "x").await, Ok(2));
        assert_eq!(t0.elapsed(), Duration::from_millis(60));
        let seen = inner.seen();
        assert_eq!(
            seen.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(0, 1), (50, 2)]
        );
        assert!(seen[0].2.is_some() && seen[0].2 == seen[1].2, "one key");
        // The caller readied the first copy's service; the hedge asked its own clone.
        assert_eq!(inner.ready_polls.load(Ordering::SeqCst), 2);
        assert_eq!(
            inner.live.load(Ordering::SeqCst),
            0,
            "the loser was dropped"
        );
    }

    /// A copy's retried `Ok` (a 503) with a server hint (its `Retry-After`), while another copy
    /// is in flight: the retry waits for the hint, as without hedging (a floor under the delay).
    #[tokio::test(start_paused = true)]
    async fn a_copys_retried_ok_hint_is_honoured_with_copies_in_flight() {
        // 1503 stands for a 503 response asking for 500 ms (above the 100 ms delay).
        let inner = Copies::new(vec![(1000, Ok(1)), (10, Ok(1503)), (10, Ok(3))]);
        let mut svc = RetryLayer::new(hedged(3, 50))
            .retry_if_ok(|v: &u32| *v >= 1000)
            .retry_after_ok(|v: &u32| (*v == 1503).then_some(Duration::from_millis(500)))
            .layer(inner.clone());
        let t0 = Instant::now();
        assert_eq!(call(&mut svc, "x").await, Ok(3));
        let starts: Vec<_> = inner.seen().iter().map(|s| (s.0, s.1)).collect();
        // The hedge answers at 60 ms asking for 500 ms: the retry starts at 560 ms.
        assert_eq!(starts, [(0, 1), (50, 2), (560, 3)]);
        assert_eq!(t0.elapsed(), Duration::from_millis(570));
    }

    #[tokio::test(start_paused = true)]
    async fn max_attempts_counts_every_copy() {
        let inner = Copies::new(vec![(1000, Err(Fail::Busy)), (1000, Err(Fail::Busy))]);
        let mut svc = RetryLayer::new(hedged(2, 20)).layer(inner.clone());
        let t0 = Instant::now();
        assert_eq!(call(&mut svc, "x").await, Err(Fail::Busy));
        assert_eq!(t0.elapsed(), Duration::from_millis(1020));
        assert_eq!(inner.seen().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hedge_is_paid_from_the_budget_and_the_call_holds_one_bulkhead_slot() {
        let inner = Copies::new(vec![(100, Ok(1)), (100, Ok(2)), (100, Ok(3))]);
        // 5 tokens: the first hedge is paid, the second refused.
        let budget = Arc::new(
            RetryBudget::builder()
                .max_tokens(5)
                .retry_cost(5)
                .build()
                .unwrap(),
        );
        let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(1).build().unwrap());
        let mut svc = RetryLayer::new(hedged(3, 20))
            .budget(budget.clone())
            .bulkhead(bulkhead.clone())
            .layer(inner.clone());
        let task = tokio::spawn(async move { call(&mut svc, "x").await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(inner.live.load(Ordering::SeqCst), 2, "two copies in flight");
        assert_eq!(bulkhead.in_flight(), 1, "one slot for the call");
        assert_eq!(task.await.unwrap(), Ok(1));
        assert_eq!(inner.seen().len(), 2, "the second hedge was not paid for");
        assert_eq!(budget.available(), 0, "a call that hedged deposits nothing");
        assert_eq!(bulkhead.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn each_copy_takes_a_breaker_permit_and_a_loser_gives_its_back() {
        let breaker = Arc::new(
            CircuitBreaker::builder()
                .failure_threshold(1)
                .reset_timeout(Duration::from_secs(1))
                .half_open_probes(2)
                .build()
                .unwrap(),
        );
        breaker.record(breaker.try_acquire().unwrap(), false);
        tokio::time::advance(Duration::from_secs(1)).await;
        let inner = Copies::new(vec![(1000, Ok(1)), (10, Ok(2))]);
        let mut svc = RetryLayer::new(hedged(3, 50))
            .circuit_breaker(breaker.clone())
            .layer(inner.clone());
        assert_eq!(call(&mut svc, "x").await, Ok(2));
        // Two probes went out; one succeeded and the loser's came back unused.
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        assert!(
            breaker.try_acquire().is_ok(),
            "the loser's probe is free again"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_quantile_hedge_after_learns_from_the_layers_calls() {
        let mut script = vec![(10, Ok(0)); 30];
        script.extend([(1000, Ok(1)), (10, Ok(2))]);
        let inner = Copies::new(script);
        let p95 = policy(3)
            .idempotent(true)
            .hedge_after(HedgeAfter::quantile(95.0))
            .build()
            .unwrap();
        let mut svc = RetryLayer::new(p95).layer(inner.clone());
        for _ in 0..30 {
            assert_eq!(call(&mut svc, "x").await, Ok(0));
        }
        let t0 = Instant::now();
        assert_eq!(call(&mut svc, "x").await, Ok(2));
        let seen = inner.seen();
        let hedge_at = seen[31].0 - seen[30].0;
        // Before the 100 ms a quantile waits without latencies: learnt from ~10 ms answers.
        assert!((10..50).contains(&hedge_at), "hedged after {hedge_at} ms");
        assert!(t0.elapsed() < Duration::from_millis(100));
    }

    /// As [`super::a_timeout_not_retried_is_a_breaker_failure`], for a hedged call's copy.
    #[tokio::test(start_paused = true)]
    async fn a_copy_cut_by_its_timeout_and_not_retried_is_a_breaker_failure() {
        let breaker = Arc::new(
            CircuitBreaker::builder()
                .failure_threshold(1)
                .reset_timeout(Duration::from_secs(3600))
                .build()
                .unwrap(),
        );
        let p = policy(3)
            .timeout(Duration::from_millis(100))
            .idempotent(true)
            .hedge_after(HedgeAfter::Fixed(Duration::from_millis(50)))
            .build()
            .unwrap();
        let inner = Copies::new(vec![(10_000, Ok(1)), (10_000, Ok(2))]);
        let mut svc = RetryLayer::new(p)
            .retry_if(|e: &Fail| *e != Fail::TimedOut)
            .circuit_breaker(breaker.clone())
            .layer(inner.clone());
        let t0 = Instant::now();
        assert_eq!(call(&mut svc, "x").await, Err(Fail::TimedOut));
        assert_eq!(
            t0.elapsed(),
            Duration::from_millis(100),
            "the first copy's limit"
        );
        assert_eq!(breaker.state(), BreakerState::Open);
    }

    /// Without hedging too: a `poll_ready` error ends the call, and the breaker counts it as a
    /// failure (the dependency did not answer), not as an answer.
    #[tokio::test(start_paused = true)]
    async fn a_poll_ready_error_is_a_breaker_failure() {
        let breaker = Arc::new(
            CircuitBreaker::builder()
                .failure_threshold(2)
                .build()
                .unwrap(),
        );
        let mut inner = Copies::new(vec![(0, Err(Fail::Busy))]);
        inner.fail_from = 2;
        let mut svc = RetryLayer::new(policy(3).build().unwrap())
            .circuit_breaker(breaker.clone())
            .layer(inner.clone());
        assert_eq!(call(&mut svc, "x").await, Err(Fail::Bad));
        assert_eq!(inner.seen().len(), 1);
        assert_eq!(breaker.state(), BreakerState::Open, "two failures");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hedge_whose_poll_ready_fails_ends_the_call() {
        let mut inner = Copies::new(vec![(1000, Ok(1))]);
        inner.fail_from = 2;
        let mut svc = RetryLayer::new(hedged(3, 50)).layer(inner.clone());
        let t0 = Instant::now();
        assert_eq!(call(&mut svc, "x").await, Err(Fail::Bad));
        assert_eq!(t0.elapsed(), Duration::from_millis(50));
        assert_eq!(
            inner.ready_polls.load(Ordering::SeqCst),
            2,
            "not asked again"
        );
        assert_eq!(inner.seen().len(), 1);
        assert_eq!(
            inner.live.load(Ordering::SeqCst),
            0,
            "the first copy was dropped"
        );
    }
}

/// `hedge_after` at `Duration::MAX` (a config's "never, in practice") never hedges: the time of
/// the hedge, past what an `Instant` holds, used to fall back to the last start, so the call
/// hedged at once, as with `hedge_after = 0` (which the builder refuses).
#[tokio::test(start_paused = true)]
async fn a_hedge_after_past_the_instants_range_never_hedges() {
    let never = policy(3)
        .idempotent(true)
        .hedge_after(retry_runtime::HedgeAfter::Fixed(Duration::MAX))
        .build()
        .unwrap();
    let inner = Scripted::new(vec![(100, Ok(1)), (0, Ok(2)), (0, Ok(3))]);
    let seen = inner.seen.clone();
    let mut svc = RetryLayer::new(never.clone()).layer(inner);
    assert_eq!(call(&mut svc, "x").await, Ok(1));
    assert_eq!(seen.lock().unwrap().len(), 1, "the layer hedged");

    let mut attempts = 0;
    let out = never
        .retry(|| {
            attempts += 1;
            let n = attempts;
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, Fail>(n)
            }
        })
        .await;
    assert_eq!(out, Ok(1));
    assert_eq!(attempts, 1, "the closure API hedged");
}
