//! HTTP's safety rule where the hostile review broke it, through both client drivers over real
//! loopback servers: a POST reset the rule keeps from a retry still counts as a breaker failure;
//! a POST without a key is never hedged; an empty Idempotency-Key is no key; the request hook is
//! asked once per outcome in a hedged call; a gateway's 503 after the upstream acted is not
//! taken as "not acted on"; `Attempts` after a rejection, a hedge and a give-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::http::{Attempts, Verdict};
use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::testing::http::{Fault, Service};
use reattempt::tower::RetryLayer;
use reattempt::{BreakerState, CircuitBreaker, HedgeAfter, RetryPolicy};
use reattempt_support::payments::quick;
use tower::{BoxError, ServiceBuilder, ServiceExt};

type Incoming = hyper::body::Incoming;

fn hyper() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

fn body(order: &str) -> String {
    format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#)
}

fn post(url: &str, order: &str, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    let mut r = Request::post(format!("{url}/charges")).header("content-type", "application/json");
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.body(Full::new(Bytes::from(body(order)))).unwrap()
}

fn get(url: &str) -> Request<Full<Bytes>> {
    Request::get(format!("{url}/prices/abc"))
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn breaker(threshold: u32) -> Arc<CircuitBreaker> {
    Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(threshold)
            .reset_timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    )
}

fn hedged() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_millis(10))
        .jitter(reattempt::Jitter::None)
        .timeout(Duration::from_secs(2))
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(50)))
        .build()
        .unwrap()
}

// (f) A POST's reset that the safety rule keeps from being retried is recorded by the breaker
// as a success: POST traffic to a server that resets every connection never opens it.
#[tokio::test]
async fn f_tower_a_posts_reset_the_safety_rule_keeps_is_a_breaker_failure() {
    let service = Service::start().await;
    service.set_default(Fault::CommitThenReset);
    let b = breaker(3);
    let svc = ServiceBuilder::new()
        .layer(
            RetryLayer::new(quick())
                .http()
                .circuit_breaker(Arc::clone(&b)),
        )
        .map_err(BoxError::from)
        .service(hyper());
    for i in 0..3 {
        let out = svc
            .clone()
            .oneshot(post(&service.url(), &format!("o-{i}"), &[]))
            .await;
        assert!(out.is_err());
    }
    assert_eq!(
        service.total_effects(),
        3,
        "each sent once (the safety rule)"
    );
    assert_eq!(b.state(), BreakerState::Open, "three failed POSTs in a row");
}

#[tokio::test]
async fn f_middleware_a_posts_reset_the_safety_rule_keeps_is_a_breaker_failure() {
    let service = Service::start().await;
    service.set_default(Fault::CommitThenReset);
    let b = breaker(3);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(quick()).circuit_breaker(Arc::clone(&b)))
        .build();
    for i in 0..3 {
        let out = client
            .post(format!("{}/charges", service.url()))
            .body(body(&format!("o-{i}")))
            .send()
            .await;
        assert!(out.is_err());
    }
    assert_eq!(
        service.total_effects(),
        3,
        "each sent once (the safety rule)"
    );
    assert_eq!(b.state(), BreakerState::Open, "three failed POSTs in a row");
}

// (a)/(g) A hedge sends a POST without a key twice: README says the rule "holds in both HTTP
// clients".
#[tokio::test]
async fn a_tower_a_hedged_post_without_a_key_is_charged_once() {
    let service = Service::start().await;
    service.script_for("o-h", [Fault::SlowAnswer(Duration::from_millis(400))]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(hedged()).http())
        .map_err(BoxError::from)
        .service(hyper());
    let out = svc.oneshot(post(&service.url(), "o-h", &[])).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(
        service.seen_for("o-h").len(),
        1,
        "a POST without a key is sent once"
    );
    assert_eq!(service.effects("o-h"), 1, "charged once");
}

#[tokio::test]
async fn a_middleware_a_hedged_post_without_a_key_is_charged_once() {
    let service = Service::start().await;
    service.script_for("o-h", [Fault::SlowAnswer(Duration::from_millis(400))]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(hedged()))
        .build();
    let out = client
        .post(format!("{}/charges", service.url()))
        .body(body("o-h"))
        .send()
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(
        service.seen_for("o-h").len(),
        1,
        "a POST without a key is sent once"
    );
    assert_eq!(service.effects("o-h"), 1, "charged once");
}

// (a) An empty Idempotency-Key makes a POST "safe", and `.idempotency_key_header()` keeps the
// empty value instead of the call's key.
#[tokio::test]
async fn a_tower_an_empty_idempotency_key_is_not_a_key() {
    let service = Service::start().await;
    service.script_for("o-e", [Fault::CommitThenReset]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(quick()).http().idempotency_key_header())
        .map_err(BoxError::from)
        .service(hyper());
    let _ = svc
        .oneshot(post(&service.url(), "o-e", &[("Idempotency-Key", "")]))
        .await;
    let seen = service.seen_for("o-e");
    let keys: Vec<_> = seen.iter().map(|s| s.key.clone()).collect();
    eprintln!("keys sent: {keys:?}");
    assert!(
        seen.len() == 1
            || keys
                .iter()
                .all(|k| k.as_deref().is_some_and(|k| !k.is_empty())),
        "a POST retried under an empty key: {keys:?}"
    );
}

#[tokio::test]
async fn a_middleware_an_empty_idempotency_key_is_not_a_key() {
    let service = Service::start().await;
    service.script_for("o-e", [Fault::CommitThenReset]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(quick()))
        .build();
    let _ = client
        .post(format!("{}/charges", service.url()))
        .header("Idempotency-Key", "")
        .body(body("o-e"))
        .send()
        .await;
    let seen = service.seen_for("o-e");
    let keys: Vec<_> = seen.iter().map(|s| s.key.clone()).collect();
    assert_eq!(seen.len(), 1, "a POST retried under an empty key: {keys:?}");
}

// (c) Attempts after the breaker turns a retry away: one request was sent.
#[tokio::test]
async fn c_tower_attempts_after_the_breaker_rejects_a_retry() {
    let service = Service::start().await;
    service.script([Fault::Unavailable, Fault::Pass]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(quick()).http().circuit_breaker(breaker(1)))
        .map_err(BoxError::from)
        .service(hyper());
    let r = svc
        .oneshot(get(&service.url()))
        .await
        .expect("the kept 503");
    assert_eq!(r.status(), 503);
    assert_eq!(service.request_count(), 1);
    assert_eq!(r.extensions().get::<Attempts>(), Some(&Attempts(1)));
}

#[tokio::test]
async fn c_middleware_attempts_after_the_breaker_rejects_a_retry() {
    let service = Service::start().await;
    service.script([Fault::Unavailable, Fault::Pass]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(quick()).circuit_breaker(breaker(1)))
        .build();
    let r = client
        .get(format!("{}/prices/abc", service.url()))
        .send()
        .await;
    eprintln!("{r:?}");
    let r = r.expect("the kept 503");
    assert_eq!(r.status(), 503);
    assert_eq!(service.request_count(), 1);
    assert_eq!(r.extensions().get::<Attempts>(), Some(&Attempts(1)));
}

// (c) Attempts after hedging: two copies sent.
#[tokio::test]
async fn c_both_attempts_after_a_hedge() {
    let service = Service::start().await;
    service.script([Fault::SlowAnswer(Duration::from_millis(400)), Fault::Pass]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(hedged()).http())
        .map_err(BoxError::from)
        .service(hyper());
    let r = svc.oneshot(get(&service.url())).await.unwrap();
    let tower = r.extensions().get::<Attempts>().copied();
    let service = Service::start().await;
    service.script([Fault::SlowAnswer(Duration::from_millis(400)), Fault::Pass]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(hedged()))
        .build();
    let r = client
        .get(format!("{}/prices/abc", service.url()))
        .send()
        .await
        .unwrap();
    let mw = r.extensions().get::<Attempts>().copied();
    assert_eq!((tower, mw), (Some(Attempts(2)), Some(Attempts(2))));
}

// (b) The hook is asked once per outcome, hedged or not.
#[tokio::test]
async fn b_tower_the_hook_is_asked_once_per_outcome_in_a_hedged_call() {
    let service = Service::start().await;
    // The first copy answers 200 while the hedge is still in flight.
    service.script([
        Fault::SlowAnswer(Duration::from_millis(100)),
        Fault::SlowAnswer(Duration::from_secs(1)),
    ]);
    let asked = Arc::new(AtomicU32::new(0));
    let a = Arc::clone(&asked);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(hedged()).http().retry_request(
            move |_: &Request<Full<Bytes>>,
                  o: Result<&Response<Incoming>, &BoxError>,
                  v: Verdict| {
                a.fetch_add(1, Ordering::SeqCst);
                eprintln!("asked: {:?} {v:?}", o.map(http::Response::status));
                v.retry()
            },
        ))
        .map_err(BoxError::from)
        .service(hyper());
    let r = svc.oneshot(get(&service.url())).await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(service.request_count(), 2, "hedged");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "one outcome, one question");
}

#[tokio::test]
async fn b_middleware_the_hook_is_asked_once_per_outcome_in_a_hedged_call() {
    let service = Service::start().await;
    service.script([
        Fault::SlowAnswer(Duration::from_millis(100)),
        Fault::SlowAnswer(Duration::from_secs(1)),
    ]);
    let asked = Arc::new(AtomicU32::new(0));
    let a = Arc::clone(&asked);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(hedged()).retry_request(move |_, o, v| {
                a.fetch_add(1, Ordering::SeqCst);
                eprintln!("asked: {:?} {v:?}", o.map(|r| r.status().as_u16()));
                v.retry()
            }),
        )
        .build();
    let r = client
        .get(format!("{}/prices/abc", service.url()))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(service.request_count(), 2, "hedged");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "one outcome, one question");
}

// (a) A gateway's 503 after its upstream acted (Envoy answers 503 for an upstream reset
// before headers): a POST without a key is charged twice.
#[tokio::test]
async fn a_a_gateway_503_after_the_upstream_acted() {
    let service = Service::start().await;
    service.script_for("o-g", [Fault::CommitThenStatus(503)]);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(quick()).http())
        .map_err(BoxError::from)
        .service(hyper());
    let r = svc.oneshot(post(&service.url(), "o-g", &[])).await.unwrap();
    assert_eq!(r.status(), 503, "the gateway's answer, not retried");
    assert_eq!(
        service.effects("o-g"),
        1,
        "a POST without a key sent twice: {:?}",
        service.seen_for("o-g")
    );
}

// (b)/(f) A hook turning a retry off for a GET's 503; a POST's 500 the rule keeps; a 404.
#[tokio::test]
async fn bf_both_drivers_refusals_count_as_failures_and_404_as_success() {
    for driver in ["tower", "middleware"] {
        for (case, fault, path, is_post, open) in [
            (
                "GET 503, hook off",
                Fault::Unavailable,
                "/prices/abc",
                false,
                true,
            ),
            (
                "POST 500, rule",
                Fault::Hinted {
                    status: 500,
                    header: "x-note",
                    value: "1",
                },
                "/charges",
                true,
                true,
            ),
            ("GET 404", Fault::Pass, "/nothing", false, false),
        ] {
            let service = Service::start().await;
            service.set_default(fault);
            let b = breaker(1);
            let url = format!("{}{path}", service.url());
            let status = if driver == "tower" {
                let svc = ServiceBuilder::new()
                    .layer(
                        RetryLayer::new(quick())
                            .http()
                            .circuit_breaker(Arc::clone(&b))
                            .retry_request(
                                |r: &Request<Full<Bytes>>,
                                 _: Result<&Response<Incoming>, &BoxError>,
                                 v: Verdict| {
                                    v.retry() && r.method() != http::Method::GET
                                },
                            ),
                    )
                    .map_err(BoxError::from)
                    .service(hyper());
                let req = if is_post {
                    post(&service.url(), "o-1", &[])
                } else {
                    Request::get(&url).body(Full::new(Bytes::new())).unwrap()
                };
                svc.oneshot(req).await.unwrap().status()
            } else {
                let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
                    .with(
                        RetryMiddleware::new(quick())
                            .circuit_breaker(Arc::clone(&b))
                            .retry_request(|r, _, v| v.retry() && r.method() != http::Method::GET),
                    )
                    .build();
                let req = if is_post {
                    client.post(&url).body(body("o-1"))
                } else {
                    client.get(&url)
                };
                req.send().await.unwrap().status()
            };
            assert_eq!(
                service.request_count(),
                usize::from(path != "/nothing"),
                "{driver} {case}: sent once ({status})"
            );
            assert_eq!(
                b.state() == BreakerState::Open,
                open,
                "{driver} {case}: {status}"
            );
        }
    }
}

#[tokio::test]
async fn c_attempts_after_a_give_up() {
    let service = Service::start().await;
    service.set_default(Fault::Unavailable);
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(quick()).http())
        .map_err(BoxError::from)
        .service(hyper());
    let r = svc.oneshot(get(&service.url())).await.unwrap();
    let t = r.extensions().get::<Attempts>().copied();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(quick()))
        .build();
    let r = client
        .get(format!("{}/prices/abc", service.url()))
        .send()
        .await
        .unwrap();
    let m = r.extensions().get::<Attempts>().copied();
    assert_eq!(
        (t, m, service.request_count()),
        (Some(Attempts(6)), Some(Attempts(6)), 12)
    );
}
