//! The HTTP client drivers' settings, end to end over real HTTP on loopback: the request-aware
//! hook (`retry_request`) and the opt-in for unsafe methods (`retry_unsafe_methods`) in the tower
//! layer and the reqwest middleware; the attempt count on the final response (`Attempts`); a
//! retrying hyper-util client stored in a struct's field (`HttpRetryService`); `.http()` and
//! `.idempotency_key_header()` in either order; the middleware's timeout told apart
//! (`reqwest_middleware::is_timeout`).

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use reattempt::http::{Attempts, Verdict};
use reattempt::reqwest_middleware::{RetryMiddleware, is_timeout};
use reattempt::runtime::NoTimeout;
use reattempt::testing::http::{Fault, RetryAfter, Service};
use reattempt::tower::{HttpRetryLayer, HttpRetryService, RetryLayer};
use reattempt_support::payments::quick;
use tower::{BoxError, ServiceBuilder, ServiceExt};

type Hyper = Client<HttpConnector, Full<Bytes>>;
type Incoming = hyper::body::Incoming;

fn hyper() -> Hyper {
    Client::builder(TokioExecutor::new()).build_http()
}

fn charge(url: &str, order: &str, dedupe: bool) -> Request<Full<Bytes>> {
    let body = format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#);
    let mut request = Request::post(format!("{url}/charges"));
    if dedupe {
        request = request.header("x-dedupe", "body");
    }
    request
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a request")
}

/// Sends `request` through `layer` over hyper-util's client, its errors boxed.
async fn through<L>(layer: L, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, BoxError>
where
    L: tower::Layer<tower::util::MapErr<Hyper, fn(hyper_util::client::legacy::Error) -> BoxError>>,
    L::Service:
        tower::Service<Request<Full<Bytes>>, Response = Response<Incoming>, Error = BoxError>,
{
    let boxed: fn(hyper_util::client::legacy::Error) -> BoxError = BoxError::from;
    ServiceBuilder::new()
        .layer(layer)
        .service(hyper().map_err(boxed))
        .oneshot(request)
        .await
}

/// Sends a charge of `order` to `url` through `middleware`, and expects an answer.
async fn post_charge(middleware: RetryMiddleware, url: &str, order: &str) -> reqwest::Response {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build()
        .post(format!("{url}/charges"))
        .body(format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#))
        .send()
        .await
        .expect("an answer")
}

/// The hook of both drivers' tests: the default decision, but a request marked `x-dedupe` (its
/// server deduplicates by the body) is safe to retry.
fn dedupe_is_safe(headers: &http::HeaderMap, verdict: Verdict) -> bool {
    verdict.retryable && (verdict.safe || headers.contains_key("x-dedupe"))
}

#[tokio::test]
async fn the_tower_hook_sees_the_request() {
    for (dedupe, sent) in [(false, 1), (true, 2)] {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::CommitThenReset]);
        let layer = RetryLayer::new(quick()).http().retry_request(
            |req: &Request<Full<Bytes>>, _: Result<&Response<Incoming>, &BoxError>, v: Verdict| {
                dedupe_is_safe(req.headers(), v)
            },
        );
        let _ = through(layer, charge(&service.url(), "o-1", dedupe)).await;
        assert_eq!(service.seen_for("o-1").len(), sent, "x-dedupe: {dedupe}");
    }
}

#[tokio::test]
async fn the_middleware_hook_sees_the_request() {
    for (dedupe, sent) in [(false, 1), (true, 2)] {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::CommitThenReset]);
        let middleware = RetryMiddleware::new(quick())
            .retry_request(|req, _, v| dedupe_is_safe(req.headers(), v));
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(middleware)
            .build();
        let mut request = client
            .post(format!("{}/charges", service.url()))
            .body(r#"{"order_id":"o-1","amount_cents":1250}"#);
        if dedupe {
            request = request.header("x-dedupe", "body");
        }
        let _ = request.send().await;
        assert_eq!(service.seen_for("o-1").len(), sent, "x-dedupe: {dedupe}");
    }
}

#[tokio::test]
async fn retrying_unsafe_methods_is_an_opt_in() {
    // Opted in, a lost response is sent again without a key: charged twice, as asked.
    let service = Service::start().await;
    service.script_for("o-t", [Fault::CommitThenReset]);
    service.script_for("o-m", [Fault::CommitThenReset]);
    let layer = RetryLayer::new(quick()).http().retry_unsafe_methods(true);
    let tower = through(layer, charge(&service.url(), "o-t", false)).await;
    assert_eq!(
        tower.expect("the retry's answer").status(),
        StatusCode::CREATED
    );
    assert_eq!(service.effects("o-t"), 2);

    let middleware = RetryMiddleware::new(quick()).retry_unsafe_methods(true);
    let answer = post_charge(middleware, &service.url(), "o-m").await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    assert_eq!(service.effects("o-m"), 2);
}

#[tokio::test]
async fn the_final_response_carries_the_attempt_count() {
    let service = Service::start().await;
    // 429s: refused before processing, so even a POST without a key is sent again (a 503 may
    // come after the upstream acted: not retried without a key).
    let busy = Fault::RateLimited(RetryAfter::Seconds(0));
    service.script_for("o-t", [busy, busy]);
    service.script_for("o-m", [busy]);
    let layer = RetryLayer::new(quick()).http();
    let tower = through(layer, charge(&service.url(), "o-t", false))
        .await
        .expect("an answer");
    assert_eq!(tower.status(), StatusCode::CREATED);
    assert_eq!(tower.extensions().get::<Attempts>(), Some(&Attempts(3)));

    let answer = post_charge(RetryMiddleware::new(quick()), &service.url(), "o-m").await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    assert_eq!(answer.extensions().get::<Attempts>(), Some(&Attempts(2)));
}

/// A client that keeps its retrying hyper-util client in a field, named.
struct Prices {
    http: HttpRetryService<Hyper, NoTimeout>,
    url: String,
}

impl Prices {
    fn new(url: String) -> Self {
        let layer = RetryLayer::new(quick()).http().without_timeout();
        Prices {
            http: tower::Layer::layer(&layer, hyper()),
            url,
        }
    }

    async fn price(&self, sku: &str) -> StatusCode {
        let request = Request::get(format!("{}/prices/{sku}", self.url))
            .body(Full::new(Bytes::new()))
            .expect("a request");
        let response = self.http.clone().oneshot(request).await.expect("an answer");
        assert_eq!(response.extensions().get::<Attempts>(), Some(&Attempts(2)));
        response.status()
    }
}

#[tokio::test]
async fn a_retrying_client_is_stored_in_a_named_field() {
    let service = Service::start().await;
    service.script_for("ab-1", [Fault::Unavailable]);
    let prices = Prices::new(service.url());
    assert_eq!(prices.price("ab-1").await, StatusCode::OK);
    assert_eq!(service.seen_for("ab-1").len(), 2);
}

#[tokio::test]
async fn http_and_the_key_header_come_in_either_order() {
    let key_first: HttpRetryLayer = RetryLayer::new(quick()).idempotency_key_header().http();
    let http_first: HttpRetryLayer = RetryLayer::new(quick()).http().idempotency_key_header();
    for (order, layer) in [("key first", key_first), ("http first", http_first)] {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::CommitThenReset]);
        let answer = through(layer, charge(&service.url(), "o-1", false)).await;
        assert_eq!(
            answer.expect("an answer").status(),
            StatusCode::CREATED,
            "{order}"
        );
        let seen = service.seen_for("o-1");
        assert_eq!(seen.len(), 2, "{order}: retried under the key");
        assert!(
            seen[0].key.is_some() && seen[0].key == seen[1].key,
            "{order}"
        );
        assert_eq!(service.effects("o-1"), 1, "{order}");
    }
}

#[tokio::test]
async fn a_middleware_timeout_is_told_by_is_timeout() {
    let service = Service::start().await;
    service.script_for("ab-2", [Fault::Hang, Fault::Hang]);
    let policy = reattempt::RetryPolicy::builder()
        .max_attempts(2)
        .delay(Duration::from_millis(10))
        .timeout(Duration::from_millis(200))
        .build()
        .expect("a policy");
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy))
        .build();
    let error = client
        .get(format!("{}/prices/ab-2", service.url()))
        .send()
        .await
        .expect_err("both attempts timed out");
    assert!(is_timeout(&error), "{error:?}");
    assert!(
        !error.is_timeout(),
        "reqwest_middleware's own check sees reqwest's timeouts only"
    );
    assert_eq!(
        service.seen_for("ab-2").len(),
        2,
        "a GET is retried after a timeout"
    );
    let refused = reqwest_middleware::Error::Reqwest(
        reqwest::Client::new().get("not a url").build().unwrap_err(),
    );
    assert!(!is_timeout(&refused));
}
