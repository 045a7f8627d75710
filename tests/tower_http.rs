//! End to end over real HTTP on loopback, through the tower layer: hyper-util's client wrapped
//! in `RetryLayer::new(policy).http().idempotency_key_header()`, against the fault-injecting
//! service. Whatever a charge meets — a lost response, a 503, a 429 with `Retry-After` — the
//! card is charged exactly once, every attempt carrying the call's one key; a 400 is sent once.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::tower::RetryLayer;
use reattempt_support::payments::quick;
use reattempt_support::{Fault, Outcome, RetryAfter, Service};
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// hyper-util's client, its errors boxed (so that a timed-out attempt is an error too),
/// retried by the layer.
fn client() -> impl tower::Service<
    Request<Full<Bytes>>,
    Response = Response<hyper::body::Incoming>,
    Error = BoxError,
    Future: Send,
> + Clone {
    let http = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    ServiceBuilder::new()
        .layer(
            RetryLayer::new(quick())
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
