//! End to end over real HTTP on loopback, through the reqwest-middleware client:
//! `RetryMiddleware::new(policy).idempotency_key_header()` against the fault-injecting service.
//! A lost response, a 503, a 429 with `Retry-After` (both forms): charged exactly once, every
//! attempt carrying the call's one key; a 400 is sent once; a streaming body is refused with a
//! typed error, never sent once silently.

use std::time::Duration;

use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::testing::http::{Fault, Outcome, RetryAfter, Service};
use reattempt_support::payments::quick;
use reqwest::StatusCode;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

fn client() -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(quick())
                .idempotency_key_header()
                .name("middleware-charge"),
        )
        .build()
}

async fn send(service: &Service, order: &str, amount: i64) -> (StatusCode, String) {
    let body = format!(r#"{{"order_id":"{order}","amount_cents":{amount}}}"#);
    let resp = client()
        .post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("an answer");
    let status = resp.status();
    (status, resp.text().await.expect("a body"))
}

async fn charged_once(faults: Vec<Fault>) -> Service {
    let service = Service::start().await;
    service.script_for("o-1", faults.clone());
    let (status, body) = send(&service, "o-1", 1250).await;
    assert_eq!(status, StatusCode::CREATED, "{faults:?}: {body}");
    assert_eq!(
        service.effects("o-1"),
        1,
        "{faults:?}: charged exactly once"
    );
    let seen = service.seen_for("o-1");
    assert_eq!(
        seen.len(),
        faults.len() + 1,
        "{faults:?}: one request per fault, then one"
    );
    let key = seen[0].key.clone().expect("an Idempotency-Key");
    assert!(seen.iter().all(|s| s.key.as_ref() == Some(&key)), "one key");
    service
}

#[tokio::test]
async fn a_lost_response_is_charged_once() {
    let service = charged_once(vec![Fault::LoseResponse]).await;
    assert_eq!(service.seen_for("o-1")[1].outcome, Outcome::Replayed);
}

#[tokio::test]
async fn a_503_is_charged_once() {
    charged_once(vec![Fault::Unavailable]).await;
}

#[tokio::test]
async fn a_429_is_retried_no_earlier_than_its_retry_after() {
    for form in [
        RetryAfter::Seconds(1),
        RetryAfter::Date(Duration::from_millis(500)),
    ] {
        let service = charged_once(vec![Fault::RateLimited(form)]).await;
        let seen = service.seen_for("o-1");
        let not_before = seen[0].retry_not_before.expect("a 429 says when");
        assert!(seen[1].wall >= not_before, "{form:?}: came back too early");
    }
}

#[tokio::test]
async fn a_400_is_sent_once() {
    let service = Service::start().await;
    let (status, _) = send(&service, "o-bad", -5).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(service.seen_for("o-bad").len(), 1);
}

#[tokio::test]
async fn a_streaming_body_is_sent_not_refused() {
    // It used to fail with `NotReplayable` before anything was sent: it is recorded (up to the
    // middleware's `replay_cap`) and replayed now (tests/replay_bodies.rs).
    let service = Service::start().await;
    let stream = futures_stream();
    let out = client()
        .post(format!("{}/charges", service.url()))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await;
    if let Err(reqwest_middleware::Error::Middleware(e)) = &out {
        panic!("the middleware refused a streaming body: {e:?}");
    }
    assert!(service.request_count() >= 1, "sent");
}

/// A one-chunk body stream.
fn futures_stream()
-> impl futures_core::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + Sync + 'static {
    struct One(Option<bytes::Bytes>);
    impl futures_core::Stream for One {
        type Item = Result<bytes::Bytes, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.take().map(Ok))
        }
    }
    One(Some(bytes::Bytes::from_static(b"{}")))
}

/// The attribute's hooks, by their names, through `RetryMiddleware::hooks`: a classification
/// that also retries a 400 (here: to see it obeyed), asked once per answer.
#[tokio::test]
async fn custom_hooks_classify_and_are_told_of_each_retry() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use reattempt::reqwest_middleware::HttpClassify;
    use reattempt::{Hooks, RetryContext};

    #[derive(Clone)]
    struct RetryBadRequests(Arc<AtomicU32>);

    impl Hooks<reqwest::Response, reqwest_middleware::Error> for RetryBadRequests {
        fn retry_if(&mut self, e: &reqwest_middleware::Error) -> bool {
            HttpClassify.retry_if(e)
        }
        fn retry_if_ok(&mut self, r: &reqwest::Response) -> bool {
            self.0.fetch_add(1, Ordering::Relaxed);
            r.status() == StatusCode::BAD_REQUEST
        }
        fn on_retry(&mut self, _: &reqwest_middleware::Error, _: &RetryContext, _: Duration) {}
    }

    let service = Service::start().await;
    let asked = Arc::new(AtomicU32::new(0));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            // The key makes the POST safe to retry (HTTP's safety rule applies under any hooks).
            RetryMiddleware::new(quick())
                .idempotency_key_header()
                .hooks(RetryBadRequests(asked.clone())),
        )
        .build();
    let resp = client
        .post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(r#"{"order_id":"o-9","amount_cents":-5}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "the last answer");
    let attempts = quick().max_attempts();
    assert_eq!(
        service.seen_for("o-9").len(),
        attempts as usize,
        "every attempt made"
    );
    assert_eq!(
        asked.load(Ordering::Relaxed),
        attempts,
        "asked once per answer"
    );
    assert_eq!(service.effects("o-9"), 0);
}

/// A client whose middleware has a throttle and a bulkhead.
fn guarded_client(
    throttle: &std::sync::Arc<reattempt::AdaptiveThrottle>,
    bulkhead: &std::sync::Arc<reattempt::Bulkhead>,
) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(quick())
                .throttle(throttle.clone())
                .bulkhead(bulkhead.clone()),
        )
        .build()
}

#[tokio::test]
async fn the_throttle_and_the_bulkhead_turn_requests_away_with_typed_errors() {
    use std::sync::Arc;
    let service = Service::start().await;
    let throttle = Arc::new(reattempt::AdaptiveThrottle::builder().build().unwrap());
    let bulkhead = Arc::new(
        reattempt::Bulkhead::builder()
            .max_concurrent(1)
            .build()
            .unwrap(),
    );
    let client = guarded_client(&throttle, &bulkhead);
    let post = |order: &str| {
        client
            .post(format!("{}/charges", service.url()))
            .header("content-type", "application/json")
            .body(format!(r#"{{"order_id":"{order}","amount_cents":1}}"#))
            .send()
    };
    let resp = post("o-1").await.expect("an answer");
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(throttle.counts(), (1, 1), "asked, and heard the answer");
    assert_eq!(bulkhead.in_flight(), 0, "the slot is freed");

    // Another caller holds the only slot.
    let held = bulkhead.try_acquire().unwrap();
    let err = post("o-2").await.expect_err("bulkhead full");
    let reqwest_middleware::Error::Middleware(e) = &err else {
        panic!("{err:?}")
    };
    assert!(
        e.downcast_ref::<reattempt::BulkheadFull>().is_some(),
        "{err:?}"
    );
    drop(held);

    // Everyone's requests were refused: the throttle sheds nearly all.
    reattempt::seed_rng(3);
    for _ in 0..10_000 {
        let _ = throttle.try_acquire();
    }
    let err = post("o-3").await.expect_err("shed");
    let reqwest_middleware::Error::Middleware(e) = &err else {
        panic!("{err:?}")
    };
    assert!(
        e.downcast_ref::<reattempt::Throttled>().is_some(),
        "{err:?}"
    );
    assert_eq!(service.request_count(), 1, "nothing sent for either");
}
