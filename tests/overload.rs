//! Overload control through `#[retryable]`, under tokio's paused clock: `one_layer`, `throttle`
//! and `bulkhead`, and their rejections reaching `#[recover]`.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use reattempt::{AdaptiveThrottle, Bulkhead, BulkheadFull, Throttled, recover, retryable};

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Down,
    Shed,
    Busy,
    TimedOut,
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::TimedOut
    }
}

impl From<Throttled> for ApiError {
    fn from(_: Throttled) -> Self {
        ApiError::Shed
    }
}

impl From<BulkheadFull> for ApiError {
    fn from(_: BulkheadFull) -> Self {
        ApiError::Busy
    }
}

static LEAF: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 3, delay = "1ms", one_layer = true)]
async fn leaf_caller() -> Result<(), ApiError> {
    LEAF.fetch_add(1, SeqCst);
    Err(ApiError::Down)
}

#[retryable(max_attempts = 3, delay = "1ms", one_layer = true)]
async fn middle() -> Result<(), ApiError> {
    leaf_caller().await
}

#[retryable(max_attempts = 3, delay = "1ms")]
async fn top() -> Result<(), ApiError> {
    middle().await
}

#[tokio::test(start_paused = true)]
async fn one_layer_through_the_attribute() {
    LEAF.store(0, SeqCst);
    assert_eq!(top().await, Err(ApiError::Down));
    assert_eq!(LEAF.load(SeqCst), 7, "27 without one_layer");
    LEAF.store(0, SeqCst);
    assert_eq!(leaf_caller().await, Err(ApiError::Down));
    assert_eq!(LEAF.load(SeqCst), 3, "alone, it retries as usual");
}

static THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());
static SENT: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 3, delay = "1ms", throttle = THROTTLE, recover = shed_fallback)]
async fn throttled_call() -> Result<&'static str, ApiError> {
    SENT.fetch_add(1, SeqCst);
    Err(ApiError::Down)
}

#[recover]
async fn shed_fallback(err: ApiError) -> Result<&'static str, ApiError> {
    match err {
        ApiError::Shed => Ok("shed"),
        other => Err(other),
    }
}

#[tokio::test(start_paused = true)]
async fn the_throttle_sheds_and_the_rejection_reaches_recover() {
    reattempt::seed_rng(5);
    let mut shed = 0;
    for _ in 0..200 {
        if throttled_call().await == Ok("shed") {
            shed += 1;
        }
    }
    let (requests, accepts) = THROTTLE.counts();
    assert_eq!(accepts, 0);
    assert!(shed > 150, "nearly every call ends shed: {shed}");
    assert!(
        u64::from(SENT.load(SeqCst)) < requests / 5,
        "most requests never reach the dependency: {} of {requests}",
        SENT.load(SeqCst)
    );
}

static BULKHEAD: LazyLock<Bulkhead> =
    LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
static MADE: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 2, delay = "10s", bulkhead = BULKHEAD, recover = busy_fallback)]
async fn bulkheaded() -> Result<&'static str, ApiError> {
    MADE.fetch_add(1, SeqCst);
    Err(ApiError::Down)
}

#[recover]
async fn busy_fallback(err: ApiError) -> Result<&'static str, ApiError> {
    match err {
        ApiError::Busy => Ok("busy"),
        other => Err(other),
    }
}

#[retryable(max_attempts = 2, delay = "1ms", bulkhead = BULKHEAD)]
fn blocking_bulkheaded() -> Result<u32, ApiError> {
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_slot_is_held_through_the_sleep_and_a_rejection_reaches_recover() {
    let first = tokio::spawn(bulkheaded());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        BULKHEAD.in_flight(),
        1,
        "asleep between retries, holding its slot"
    );
    assert_eq!(bulkheaded().await, Ok("busy"));
    assert_eq!(blocking_bulkheaded(), Err(ApiError::Busy));
    assert_eq!(MADE.load(SeqCst), 1, "no attempt for the calls turned away");
    assert_eq!(first.await.unwrap(), Err(ApiError::Down));
    assert_eq!(BULKHEAD.in_flight(), 0);
    assert_eq!(blocking_bulkheaded(), Ok(1));
}

static HEDGED_BULKHEAD: LazyLock<Bulkhead> =
    LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
static HEDGED_THROTTLE: LazyLock<AdaptiveThrottle> =
    LazyLock::new(|| AdaptiveThrottle::builder().build().unwrap());
static HEDGED_SENT: AtomicU32 = AtomicU32::new(0);

/// Hedged after 50 ms; the first copy hangs for a second, the others answer in 10 ms.
#[retryable(
    max_attempts = 3,
    hedge_after = "50ms", idempotent = true,
    throttle = HEDGED_THROTTLE,
    bulkhead = HEDGED_BULKHEAD
)]
async fn hedged_guarded() -> Result<u32, ApiError> {
    let n = HEDGED_SENT.fetch_add(1, SeqCst) + 1;
    assert_eq!(HEDGED_BULKHEAD.in_flight(), 1, "one slot for every copy");
    tokio::time::sleep(Duration::from_millis(if n == 1 { 1000 } else { 10 })).await;
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn a_hedged_function_honours_its_throttle_and_bulkhead() {
    // A dependency that accepted what it was sent: nothing is shed.
    for _ in 0..10 {
        HEDGED_THROTTLE.try_acquire().unwrap();
        HEDGED_THROTTLE.record(true);
    }
    assert_eq!(hedged_guarded().await, Ok(2), "the hedge answered first");
    assert_eq!(
        HEDGED_THROTTLE.counts(),
        (12, 12),
        "each copy asked the throttle; the winner was accepted, and the loser, dropped before \
         it answered, counts as accepted (the dependency did not refuse it)"
    );
    assert_eq!(HEDGED_BULKHEAD.in_flight(), 0);
    let held = HEDGED_BULKHEAD.try_acquire().unwrap();
    assert_eq!(hedged_guarded().await, Err(ApiError::Busy));
    assert_eq!(HEDGED_SENT.load(SeqCst), 2, "turned away: no attempt made");
    drop(held);
}

/// `one_layer` across a task boundary, as between services: the caller's attempts left travel
/// in `reattempt::http::OUTER_ATTEMPTS_LEFT`, written by the client integrations (or
/// `outer_header`), read back by `OuterRetryLayer` / `outer_call`.
#[cfg(feature = "http")]
mod across_tasks {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

    use reattempt::RetryPolicy;
    use reattempt::http::{OUTER_ATTEMPTS_LEFT, outer_attempts_left, outer_call, outer_header};
    use reattempt::retryable;

    use super::ApiError;

    /// A handler's call to a dead dependency: counts the attempts that reach it.
    #[retryable(max_attempts = 3, delay = "1ms", one_layer = true)]
    async fn dead_dependency(hits: &AtomicU32) -> Result<(), ApiError> {
        hits.fetch_add(1, SeqCst);
        Err(ApiError::Down)
    }

    fn policy(one_layer: bool) -> RetryPolicy {
        RetryPolicy::builder()
            .max_attempts(3)
            .delay(std::time::Duration::from_millis(1))
            .one_layer(one_layer)
            .build()
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_attribute_inside_outer_call_defers_while_the_caller_has_attempts_left() {
        let hits = AtomicU32::new(0);
        for (left, expected) in [(Some(2), 1), (Some(1), 1), (Some(0), 3), (None, 3)] {
            hits.store(0, SeqCst);
            let out = outer_call(left, dead_dependency(&hits)).await;
            assert_eq!(out, Err(ApiError::Down));
            assert_eq!(
                hits.load(SeqCst),
                expected,
                "caller's attempts left: {left:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_closure_api_inside_outer_call_defers_and_passes_the_header_on() {
        let attempts = AtomicU32::new(0);
        let mut sent = vec![];
        let one_layer = policy(true);
        let call = one_layer.retry(|| {
            attempts.fetch_add(1, SeqCst);
            sent.push(outer_header().map(|v| v.to_str().unwrap().to_owned()));
            async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) }
        });
        assert!(outer_call(Some(4), call).await.is_err());
        assert_eq!(attempts.load(SeqCst), 1);
        assert_eq!(
            sent,
            [Some("4".to_owned())],
            "it makes one attempt: the retrying, and the count passed on, are the caller's"
        );

        // On the caller's last attempt: three attempts, the last one says nothing.
        let (attempts, mut sent) = (AtomicU32::new(0), vec![]);
        let call = one_layer.retry(|| {
            attempts.fetch_add(1, SeqCst);
            sent.push(outer_header().map(|v| v.to_str().unwrap().to_owned()));
            async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) }
        });
        assert!(outer_call(Some(0), call).await.is_err());
        assert_eq!(attempts.load(SeqCst), 3);
        assert_eq!(sent, [Some("2".to_owned()), Some("1".to_owned()), None]);

        // Without one_layer, a call retries whatever its caller has left.
        let attempts = AtomicU32::new(0);
        let every = policy(false);
        let call = every.retry(|| {
            attempts.fetch_add(1, SeqCst);
            async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) }
        });
        assert!(outer_call(Some(2), call).await.is_err());
        assert_eq!(attempts.load(SeqCst), 3);
    }

    #[test]
    fn a_garbled_header_is_ignored() {
        let mut headers = http::HeaderMap::new();
        headers.insert(OUTER_ATTEMPTS_LEFT, http::HeaderValue::from_static("-1"));
        assert_eq!(outer_attempts_left(&headers), None);
    }

    /// A client `RetryLayer::new(..).http()` whose transport hands each request to a server
    /// task (`tokio::spawn`, as a network would: the server polls no attempt of the client),
    /// where `OuterRetryLayer` runs a handler making a `one_layer` call to a dead dependency.
    #[cfg(feature = "tower")]
    mod tower_layers {
        use std::convert::Infallible;
        use std::future::Future;
        use std::pin::Pin;
        use std::sync::Arc;
        use std::task::{Context, Poll};

        use http::{Request, Response, StatusCode};
        use reattempt::tower::{OuterRetryLayer, RetryLayer};
        use tower::{Layer, Service, ServiceExt};

        use super::*;

        type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

        /// The server's handler: one `one_layer` call, 503 when it fails. Records the header it
        /// received.
        #[derive(Clone)]
        struct Handler {
            hits: Arc<AtomicU32>,
            seen: Arc<std::sync::Mutex<Vec<Option<String>>>>,
        }

        impl Service<Request<String>> for Handler {
            type Response = Response<String>;
            type Error = Infallible;
            type Future = BoxFuture<Result<Response<String>, Infallible>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, request: Request<String>) -> Self::Future {
                let header = request
                    .headers()
                    .get(OUTER_ATTEMPTS_LEFT)
                    .map(|v| v.to_str().unwrap().to_owned());
                self.seen.lock().unwrap().push(header);
                let hits = Arc::clone(&self.hits);
                Box::pin(async move {
                    let status = match dead_dependency(&hits).await {
                        Ok(()) => StatusCode::OK,
                        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
                    };
                    let mut response = Response::new(String::new());
                    *response.status_mut() = status;
                    Ok(response)
                })
            }
        }

        /// The "network": each request served on its own task.
        #[derive(Clone)]
        struct Spawn<S>(S);

        impl<S> Service<Request<String>> for Spawn<S>
        where
            S: Service<Request<String>, Response = Response<String>, Error = Infallible>
                + Clone
                + Send
                + 'static,
            S::Future: Send,
        {
            type Response = Response<String>;
            type Error = Infallible;
            type Future = BoxFuture<Result<Response<String>, Infallible>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, request: Request<String>) -> Self::Future {
                let server = self.0.clone();
                Box::pin(async move {
                    tokio::spawn(server.oneshot(request))
                        .await
                        .expect("the server task")
                })
            }
        }

        async fn run(server_layer: bool) -> (u32, Vec<Option<String>>) {
            run_with(server_layer, true).await
        }

        async fn run_with(server_layer: bool, header: bool) -> (u32, Vec<Option<String>>) {
            let hits = Arc::new(AtomicU32::new(0));
            let seen = Arc::new(std::sync::Mutex::new(vec![]));
            let handler = Handler {
                hits: Arc::clone(&hits),
                seen: Arc::clone(&seen),
            };
            let client = RetryLayer::new(policy(false)).http().without_timeout();
            let client = if header {
                client.outer_attempts_header()
            } else {
                client
            };
            let response = if server_layer {
                let server = OuterRetryLayer::new().layer(handler);
                client
                    .layer(Spawn(server))
                    .oneshot(Request::new(String::new()))
                    .await
            } else {
                client
                    .layer(Spawn(handler))
                    .oneshot(Request::new(String::new()))
                    .await
            };
            assert_eq!(response.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
            let seen = seen.lock().unwrap().clone();
            (hits.load(SeqCst), seen)
        }

        #[tokio::test(start_paused = true)]
        async fn the_client_layer_sends_no_header_unless_asked() {
            let (hits, seen) = run_with(true, false).await;
            assert_eq!(seen, [None, None, None]);
            assert_eq!(
                hits, 9,
                "the server's calls retry as if there were no caller"
            );
        }

        #[tokio::test(start_paused = true)]
        async fn the_client_layer_writes_the_header_and_the_server_layer_reads_it() {
            let (hits, seen) = run(true).await;
            assert_eq!(
                seen,
                [Some("2".to_owned()), Some("1".to_owned()), None],
                "attempts left after each of the client's 3"
            );
            assert_eq!(
                hits,
                1 + 1 + 3,
                "one attempt while the client retries, then 3"
            );
        }

        #[tokio::test(start_paused = true)]
        async fn without_the_server_layer_the_header_is_not_read() {
            let (hits, _) = run(false).await;
            assert_eq!(hits, 3 * 3);
        }
    }

    /// The reqwest-middleware client writes the header on each attempt that has attempts left.
    #[cfg(feature = "reqwest-middleware")]
    mod middleware {
        use std::sync::{Arc, Mutex};

        use reattempt::reqwest_middleware::RetryMiddleware;
        use reqwest_middleware::{ClientBuilder, Middleware, Next};

        use super::*;

        /// In place of the network: records the header and answers 503.
        struct Answer(Arc<Mutex<Vec<Option<String>>>>);

        #[async_trait::async_trait]
        impl Middleware for Answer {
            async fn handle(
                &self,
                req: reqwest::Request,
                _: &mut http::Extensions,
                _: Next<'_>,
            ) -> reqwest_middleware::Result<reqwest::Response> {
                let header = req
                    .headers()
                    .get(OUTER_ATTEMPTS_LEFT)
                    .map(|v| v.to_str().unwrap().to_owned());
                self.0.lock().unwrap().push(header);
                let mut response = http::Response::new("busy");
                *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
                Ok(reqwest::Response::from(response))
            }
        }

        #[tokio::test(start_paused = true)]
        async fn the_middleware_writes_the_header_and_passes_an_outer_one_on() {
            let seen = Arc::new(Mutex::new(vec![]));
            let client = ClientBuilder::new(reqwest::Client::new())
                .with(RetryMiddleware::new(policy(false)).outer_attempts_header())
                .with(Answer(Arc::clone(&seen)))
                .build();
            let response = client.get("http://localhost/").send().await.unwrap();
            assert_eq!(response.status(), 503);
            let got = std::mem::take(&mut *seen.lock().unwrap());
            assert_eq!(got, [Some("2".to_owned()), Some("1".to_owned()), None]);

            // Serving a request whose caller has 5 attempts left: the last attempt says so.
            let response = outer_call(Some(5), client.get("http://localhost/").send())
                .await
                .unwrap();
            assert_eq!(response.status(), 503);
            let got = std::mem::take(&mut *seen.lock().unwrap());
            assert_eq!(
                got,
                [
                    Some("2".to_owned()),
                    Some("1".to_owned()),
                    Some("5".to_owned())
                ]
            );
        }

        #[tokio::test(start_paused = true)]
        async fn the_middleware_sends_no_header_unless_asked() {
            let seen = Arc::new(Mutex::new(vec![]));
            let client = ClientBuilder::new(reqwest::Client::new())
                .with(RetryMiddleware::new(policy(false)))
                .with(Answer(Arc::clone(&seen)))
                .build();
            let response = client.get("http://localhost/").send().await.unwrap();
            assert_eq!(response.status(), 503);
            let got = std::mem::take(&mut *seen.lock().unwrap());
            assert_eq!(got, [None, None, None]);
        }
    }
}

/// Issue 25, finding 3: a nested call waiting for a bulkhead slot never outlives its caller.
/// The bulkhead would let the inner call wait 10 s; its caller's `max_elapsed` is 300 ms.
static WAIT_BULKHEAD: LazyLock<Bulkhead> = LazyLock::new(|| {
    Bulkhead::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(10))
        .build()
        .unwrap()
});
static WAITER_MADE: AtomicU32 = AtomicU32::new(0);

#[retryable(max_attempts = 3, timeout = "1s", bulkhead = WAIT_BULKHEAD)]
async fn timed_waiter() -> Result<u32, ApiError> {
    WAITER_MADE.fetch_add(1, SeqCst);
    Ok(1)
}

#[retryable(max_attempts = 3, bulkhead = WAIT_BULKHEAD)]
async fn untimed_waiter() -> Result<u32, ApiError> {
    WAITER_MADE.fetch_add(1, SeqCst);
    Ok(1)
}

#[retryable(max_attempts = 1, max_elapsed = "300ms")]
async fn caller_of_timed_waiter() -> Result<u32, ApiError> {
    timed_waiter().await
}

#[retryable(max_attempts = 1, max_elapsed = "300ms")]
async fn caller_of_untimed_waiter() -> Result<u32, ApiError> {
    untimed_waiter().await
}

#[retryable(max_attempts = 3, timeout = "1s", max_elapsed = "200ms", bulkhead = WAIT_BULKHEAD)]
async fn waiter_with_its_own_deadline() -> Result<u32, ApiError> {
    WAITER_MADE.fetch_add(1, SeqCst);
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_a_bulkhead_slot_ends_at_the_callers_deadline_or_its_own() {
    let _held = WAIT_BULKHEAD.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    // Timed: the attempt cannot be made any more, the call ends as a spent deadline does.
    assert_eq!(caller_of_timed_waiter().await, Err(ApiError::TimedOut));
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(300),
        "waited past the caller"
    );
    // Untimed (its attempt would run whatever the deadline): turned away.
    assert_eq!(caller_of_untimed_waiter().await, Err(ApiError::Busy));
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(600),
        "waited past the caller"
    );
    // Its own `max_elapsed` bounds the wait too.
    assert_eq!(
        waiter_with_its_own_deadline().await,
        Err(ApiError::TimedOut)
    );
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(800),
        "waited past its own max_elapsed"
    );
    assert_eq!(WAITER_MADE.load(SeqCst), 0, "no attempt ran without a slot");
}

// A bulkhead without `max_wait` never waits: when it is full, the call is turned away
// (`BulkheadFull`) even under a spent deadline, through every driver (found by the hostile
// review: the unhedged attribute ended such a call as a timeout, the closure API and the hedged
// attribute with the rejection). Its own static, so that no other test holds its slot.
static NO_WAIT: LazyLock<Bulkhead> =
    LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());

#[retryable(max_attempts = 3, timeout = "1s", bulkhead = NO_WAIT)]
async fn inner_no_wait() -> Result<u32, ApiError> {
    Ok(1)
}

#[retryable(max_attempts = 3, timeout = "1s", hedge_after = "50ms", idempotent = true, bulkhead = NO_WAIT)]
async fn inner_no_wait_hedged() -> Result<u32, ApiError> {
    Ok(1)
}

#[retryable(max_attempts = 1, max_elapsed = "300ms")]
async fn spent_caller_of_no_wait(hedged: bool) -> Result<u32, ApiError> {
    tokio::time::sleep(Duration::from_millis(400)).await;
    if hedged {
        inner_no_wait_hedged().await
    } else {
        inner_no_wait().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_without_max_wait_turns_the_call_away_under_a_spent_deadline() {
    let _held = NO_WAIT.try_acquire().unwrap();
    assert_eq!(spent_caller_of_no_wait(false).await, Err(ApiError::Busy));
    assert_eq!(spent_caller_of_no_wait(true).await, Err(ApiError::Busy));
    let outer = reattempt::RetryPolicy::builder()
        .max_attempts(1)
        .max_elapsed(Duration::from_millis(300))
        .build()
        .unwrap();
    let inner = reattempt::RetryPolicy::builder()
        .max_attempts(3)
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let closure = outer
        .retry(|| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            inner
                .retry(|| async { Ok::<u32, ApiError>(1) })
                .bulkhead(&NO_WAIT)
                .await
        })
        .without_timeout()
        .await;
    assert_eq!(closure, Err(ApiError::Busy));
}

/// The bulkhead's slot is the attempts': it is free again when they are over, before the
/// `#[recover]` fallback runs, in every driver (unhedged, hedged, blocking), so a slow fallback
/// never holds up calls that could reach the dependency.
mod slot_during_recover {
    use std::sync::LazyLock;

    use reattempt::{Bulkhead, recover, retryable};

    use super::ApiError;

    static UNHEDGED: LazyLock<Bulkhead> =
        LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
    static HEDGED: LazyLock<Bulkhead> =
        LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());
    static BLOCKING: LazyLock<Bulkhead> =
        LazyLock::new(|| Bulkhead::builder().max_concurrent(1).build().unwrap());

    #[retryable(max_attempts = 2, delay = "1ms", bulkhead = UNHEDGED, recover = in_flight_unhedged)]
    async fn unhedged() -> Result<u32, ApiError> {
        assert_eq!(UNHEDGED.in_flight(), 1, "the attempts hold the slot");
        Err(ApiError::Down)
    }

    #[recover]
    async fn in_flight_unhedged(_: ApiError) -> Result<u32, ApiError> {
        Ok(UNHEDGED.in_flight())
    }

    #[retryable(max_attempts = 2, delay = "1ms", hedge_after = "5ms", idempotent = true, bulkhead = HEDGED, recover = in_flight_hedged)]
    async fn hedged() -> Result<u32, ApiError> {
        assert_eq!(HEDGED.in_flight(), 1, "the attempts hold the slot");
        Err(ApiError::Down)
    }

    #[recover]
    async fn in_flight_hedged(_: ApiError) -> Result<u32, ApiError> {
        Ok(HEDGED.in_flight())
    }

    #[retryable(max_attempts = 2, bulkhead = BLOCKING, recover = in_flight_blocking)]
    fn blocking() -> Result<u32, ApiError> {
        assert_eq!(BLOCKING.in_flight(), 1, "the attempts hold the slot");
        Err(ApiError::Down)
    }

    #[recover]
    fn in_flight_blocking(_: ApiError) -> Result<u32, ApiError> {
        Ok(BLOCKING.in_flight())
    }

    #[tokio::test(start_paused = true)]
    async fn the_slot_is_free_before_the_fallback_runs_in_every_driver() {
        assert_eq!(unhedged().await, Ok(0), "unhedged");
        assert_eq!(hedged().await, Ok(0), "hedged");
        assert_eq!(blocking(), Ok(0), "blocking");
        assert_eq!(
            UNHEDGED.in_flight() + HEDGED.in_flight() + BLOCKING.in_flight(),
            0
        );
        // A call turned away reaches its fallback holding nothing.
        let held = UNHEDGED.try_acquire().unwrap();
        assert_eq!(
            unhedged().await,
            Ok(1),
            "only the other holder's slot is taken"
        );
        drop(held);
    }
}

/// `one_layer` on a hedged call nested in an attempt of a call with attempts left: it makes one
/// attempt (no hedge either) and leaves the retrying to its caller, as an unhedged call does.
mod one_layer_hedged {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use std::time::Duration;

    use reattempt::retryable;

    use super::ApiError;

    static SENT: AtomicU32 = AtomicU32::new(0);

    /// Each attempt fails after 100 ms; a hedge would start every 10 ms.
    #[retryable(
        max_attempts = 3,
        delay = "1ms",
        hedge_after = "10ms",
        idempotent = true,
        one_layer = true
    )]
    async fn inner() -> Result<(), ApiError> {
        SENT.fetch_add(1, SeqCst);
        tokio::time::sleep(Duration::from_millis(100)).await;
        Err(ApiError::Down)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn outer() -> Result<(), ApiError> {
        inner().await
    }

    #[tokio::test(start_paused = true)]
    async fn a_hedged_one_layer_call_makes_one_attempt_while_its_caller_retries() {
        SENT.store(0, SeqCst);
        assert_eq!(outer().await, Err(ApiError::Down));
        assert_eq!(
            SENT.load(SeqCst),
            5,
            "(max_attempts − 1) × (layers − 1) + max_attempts, as unhedged"
        );
        SENT.store(0, SeqCst);
        assert_eq!(inner().await, Err(ApiError::Down));
        assert_eq!(SENT.load(SeqCst), 3, "alone, it hedges as its policy says");
    }
}
