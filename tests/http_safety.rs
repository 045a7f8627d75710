//! HTTP's safety rule (RFC 9110 §9.2.2), end to end over real HTTP on loopback, through both
//! client drivers: the tower layer's `.http()` over hyper-util's client, and the reqwest
//! middleware. A `POST` whose response is lost (the service reads it, applies it, then resets
//! the connection without answering) is sent once without an idempotency key, and until it
//! succeeds with one (the layer's, or the caller's own header); a `POST` to a port where nothing
//! listens is retried either way, since it provably never left the client; a `GET` is retried
//! after a lost response as before. Attempts are counted by the server (`seen_for`) where one
//! answers, and by `on_retry` where none does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::reqwest_middleware::{HttpClassify, RetryMiddleware};
use reattempt::testing::http::{Fault, Outcome, RetryAfter, Service};
use reattempt::tower::RetryLayer;
use reattempt::{Hooks, RetryContext};
use reattempt_support::payments::quick;
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// How a test sets up its client: with the layer's own `Idempotency-Key`, or without one.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Key {
    None,
    Layer,
}

/// The attempts a call made, counted by `on_retry` (one more than the retries).
#[derive(Clone, Default)]
struct Retries(Arc<AtomicU32>);

impl Retries {
    fn attempts(&self) -> u32 {
        self.0.load(Ordering::SeqCst) + 1
    }
}

/// Sends a charge of `order` through the tower layer (hyper-util's client, errors boxed),
/// with `extra` headers, to `url`.
async fn tower_charge(
    url: &str,
    order: &str,
    key: Key,
    extra: &[(&str, &str)],
    retries: &Retries,
) -> Result<Response<hyper::body::Incoming>, BoxError> {
    let counter = Arc::clone(&retries.0);
    let layer = RetryLayer::new(quick()).http().on_retry(
        move |_: &BoxError, _: &RetryContext, _: Duration| {
            counter.fetch_add(1, Ordering::SeqCst);
        },
    );
    let http = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let body = format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#);
    let mut request =
        Request::post(format!("{url}/charges")).header("content-type", "application/json");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    let layer = if key == Key::Layer {
        layer.idempotency_key_header()
    } else {
        layer
    };
    ServiceBuilder::new()
        .layer(layer)
        .map_err(BoxError::from)
        .service(http)
        .oneshot(request)
        .await
}

/// The middleware's classification, counting retries.
#[derive(Clone)]
struct Counting(Retries);

impl Hooks<reqwest::Response, reqwest_middleware::Error> for Counting {
    fn retry_if(&mut self, e: &reqwest_middleware::Error) -> bool {
        HttpClassify.retry_if(e)
    }
    fn retry_if_ok(&mut self, r: &reqwest::Response) -> bool {
        HttpClassify.retry_if_ok(r)
    }
    fn retry_after_ok(&mut self, r: &reqwest::Response) -> Option<Duration> {
        HttpClassify.retry_after_ok(r)
    }
    fn is_timeout(&mut self, e: &reqwest_middleware::Error) -> bool {
        HttpClassify.is_timeout(e)
    }
    fn on_retry(&mut self, _: &reqwest_middleware::Error, _: &RetryContext, _: Duration) {
        (self.0).0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Sends a charge of `order` through the reqwest middleware, with `extra` headers, to `url`.
async fn middleware_charge(
    url: &str,
    order: &str,
    key: Key,
    extra: &[(&str, &str)],
    retries: &Retries,
) -> reqwest_middleware::Result<reqwest::Response> {
    let mut middleware = RetryMiddleware::new(quick()).hooks(Counting(retries.clone()));
    if key == Key::Layer {
        middleware = middleware.idempotency_key_header();
    }
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build();
    let mut request = client
        .post(format!("{url}/charges"))
        .header("content-type", "application/json");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request
        .body(format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#))
        .send()
        .await
}

/// The two drivers, as one call: the status of the final response, or the error's text.
async fn charge(
    driver: &str,
    url: &str,
    order: &str,
    key: Key,
    extra: &[(&str, &str)],
    retries: &Retries,
) -> Result<StatusCode, String> {
    match driver {
        "tower" => tower_charge(url, order, key, extra, retries)
            .await
            .map(|r| r.status())
            .map_err(|e| format!("{e:?}")),
        _ => middleware_charge(url, order, key, extra, retries)
            .await
            .map(|r| r.status())
            .map_err(|e| format!("{e:?}")),
    }
}

const DRIVERS: [&str; 2] = ["tower", "middleware"];

#[tokio::test]
async fn a_post_whose_response_is_lost_is_sent_once_without_a_key() {
    for driver in DRIVERS {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::CommitThenReset]);
        let retries = Retries::default();
        let out = charge(driver, &service.url(), "o-1", Key::None, &[], &retries).await;
        assert!(out.is_err(), "{driver}: the lost response's error: {out:?}");
        assert_eq!(service.seen_for("o-1").len(), 1, "{driver}: sent once");
        assert_eq!(service.effects("o-1"), 1, "{driver}: charged once");
        assert_eq!(retries.attempts(), 1, "{driver}");
    }
}

#[tokio::test]
async fn a_post_whose_response_never_comes_is_sent_once_without_a_key() {
    // The service applies the charge and never answers: the policy's `timeout` cuts the attempt.
    for driver in DRIVERS {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::LoseResponse]);
        let retries = Retries::default();
        let out = charge(driver, &service.url(), "o-1", Key::None, &[], &retries).await;
        assert!(out.is_err(), "{driver}: timed out: {out:?}");
        assert_eq!(service.seen_for("o-1").len(), 1, "{driver}: sent once");
        assert_eq!(service.effects("o-1"), 1, "{driver}: charged once");
    }
}

#[tokio::test]
async fn a_post_with_the_layers_key_is_sent_until_it_succeeds() {
    for driver in DRIVERS {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::CommitThenReset, Fault::CommitThenReset]);
        let retries = Retries::default();
        let out = charge(driver, &service.url(), "o-1", Key::Layer, &[], &retries).await;
        assert_eq!(out, Ok(StatusCode::CREATED), "{driver}");
        let seen = service.seen_for("o-1");
        assert_eq!(seen.len(), 3, "{driver}: sent until it succeeded");
        assert_eq!(seen[2].outcome, Outcome::Replayed, "{driver}");
        assert_eq!(service.effects("o-1"), 1, "{driver}: charged once");
    }
}

#[tokio::test]
async fn a_post_with_the_callers_own_key_is_sent_until_it_succeeds() {
    for driver in DRIVERS {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::CommitThenReset]);
        let retries = Retries::default();
        let own = [("Idempotency-Key", "caller-key-1")];
        let out = charge(driver, &service.url(), "o-1", Key::None, &own, &retries).await;
        assert_eq!(out, Ok(StatusCode::CREATED), "{driver}");
        let seen = service.seen_for("o-1");
        assert_eq!(seen.len(), 2, "{driver}: retried under the caller's key");
        assert!(
            seen.iter()
                .all(|s| s.key.as_deref() == Some("caller-key-1"))
        );
        assert_eq!(service.effects("o-1"), 1, "{driver}: charged once");
    }
}

#[tokio::test]
async fn a_post_to_a_refused_port_is_retried_with_or_without_a_key() {
    // A port that was bound, then freed: nothing listens there, a connection is refused.
    let url = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        format!("http://{}", listener.local_addr().expect("an address"))
    };
    let max = quick().max_attempts();
    for driver in DRIVERS {
        for key in [Key::None, Key::Layer] {
            let retries = Retries::default();
            let out = charge(driver, &url, "o-1", key, &[], &retries).await;
            assert!(out.is_err(), "{driver}, {key:?}: {out:?}");
            assert_eq!(
                retries.attempts(),
                max,
                "{driver}, {key:?}: every attempt made"
            );
        }
    }
}

#[tokio::test]
async fn a_post_answered_429_is_retried_without_a_key() {
    // A 429 says the server refused the request before acting on it.
    for driver in DRIVERS {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::RateLimited(RetryAfter::Seconds(0))]);
        let retries = Retries::default();
        let out = charge(driver, &service.url(), "o-1", Key::None, &[], &retries).await;
        assert_eq!(
            out,
            Ok(StatusCode::CREATED),
            "{driver}: retried after the 429"
        );
        assert_eq!(service.seen_for("o-1").len(), 2, "{driver}");
        assert_eq!(service.effects("o-1"), 1, "{driver}");
    }
}

#[tokio::test]
async fn a_post_answered_503_without_a_key_is_returned() {
    // A 503 may come after the upstream acted (a service mesh's answer to a reset): not
    // sent again without a key; with one, it is.
    for driver in DRIVERS {
        let service = Service::start().await;
        service.script_for("o-1", [Fault::Unavailable]);
        service.script_for("o-2", [Fault::Unavailable]);
        let retries = Retries::default();
        let out = charge(driver, &service.url(), "o-1", Key::None, &[], &retries).await;
        assert_eq!(out, Ok(StatusCode::SERVICE_UNAVAILABLE), "{driver}");
        assert_eq!(service.seen_for("o-1").len(), 1, "{driver}: sent once");
        let out = charge(driver, &service.url(), "o-2", Key::Layer, &[], &retries).await;
        assert_eq!(
            out,
            Ok(StatusCode::CREATED),
            "{driver}: with a key, retried"
        );
    }
}
