//! End to end over real HTTP on loopback, through the tower layer: hyper-util's client wrapped
//! in `RetryLayer::new(policy).http().idempotency_key_header()`, against the fault-injecting
//! service. Whatever a charge meets — a lost response, a 503, a 429 with `Retry-After` — the
//! card is charged exactly once, every attempt carrying the call's one key; a 400 is sent once.
//! With `hedge_after`, a slow replica is hedged: the copy carries the same key, gets the stored
//! answer, and the charge is made once (the layer's version of `http_hedging.rs`).

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::testing::http::{Fault, Outcome, RetryAfter, Service};
use reattempt::tower::RetryLayer;
use reattempt::{HedgeAfter, Jitter, RetryPolicy};
use reattempt_support::payments::quick;
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// hyper-util's client, its errors boxed (so that a timed-out attempt is an error too),
/// retried by the layer.
fn client() -> impl tower::Service<
    Request<Full<Bytes>>,
    Response = Response<hyper::body::Incoming>,
    Error = BoxError,
    Future: Send,
> + Clone {
    client_with(quick())
}

/// As [`client`], under `policy`.
fn client_with(
    policy: RetryPolicy,
) -> impl tower::Service<
    Request<Full<Bytes>>,
    Response = Response<hyper::body::Incoming>,
    Error = BoxError,
    Future: Send,
> + Clone {
    let http = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    ServiceBuilder::new()
        .layer(
            RetryLayer::new(policy)
                .http()
                .idempotency_key_header()
                .name("tower-charge"),
        )
        .map_err(BoxError::from)
        .service(http)
}

fn charge(service: &Service, order: &str, amount: i64) -> Request<Full<Bytes>> {
    let body = format!(r#"{{"order_id":"{order}","amount_cents":{amount}}}"#);
    Request::post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request")
}

async fn send(service: &Service, order: &str, amount: i64) -> (StatusCode, String) {
    let resp = client()
        .oneshot(charge(service, order, amount))
        .await
        .expect("an answer");
    let status = resp.status();
    let body = resp.into_body().collect().await.expect("a body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The charge meets `faults`, then a healthy service: one effect, one key, one request per
/// fault and one more.
async fn charged_once(faults: Vec<Fault>) -> Service {
    let service = Service::start().await;
    service.script_for("o-1", faults.clone());
    let (status, body) = send(&service, "o-1", 1250).await;
    assert_eq!(status, StatusCode::CREATED, "{faults:?}: {body}");
    assert!(body.contains("\"order_id\":\"o-1\""), "{body}");
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
    let seen = service.seen_for("o-1");
    assert_eq!(
        seen[1].outcome,
        Outcome::Replayed,
        "the retry got the stored answer"
    );
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
    assert_eq!(service.effects("o-bad"), 0);
}

/// The pause of the slow replica: far longer than the hedge delay plus a fast answer.
const PAUSE: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_is_hedged_and_charged_once() {
    let service = Service::start().await;
    service.script_for("o-h", [Fault::SlowAnswer(PAUSE)]);
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .jitter(Jitter::None)
        .timeout(Duration::from_secs(10))
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(100)))
        .build()
        .expect("a valid policy");
    let t0 = std::time::Instant::now();
    let resp = client_with(policy)
        .oneshot(charge(&service, "o-h", 1250))
        .await
        .expect("the hedge's answer");
    let took = t0.elapsed();
    assert_eq!(resp.status(), StatusCode::CREATED);
    service.assert_hedged_once("o-h");
    assert!(
        took < PAUSE / 2,
        "answered by the hedge (100 ms + a fast answer), not after the pause: {took:?}"
    );
}
