//! A server's retry hints end to end on loopback, through both HTTP client drivers (the tower
//! layer's `.http()` over hyper-util's client, and the reqwest middleware) against the
//! fault-injecting service: a 429 with `x-amz-retry-after: 1500` is retried no earlier than
//! 1.5 s later, a 503 with `retry-after-ms: 250` no earlier than 250 ms later, and a 503 with
//! `x-should-retry: false` is sent once. (Real time: the service's sockets run on the real clock;
//! each assertion is a lower bound the hint sets, not a measurement of speed.)

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::testing::http::{Fault, Service};
use reattempt::tower::RetryLayer;
use reattempt_support::payments::quick;
use reqwest_middleware::ClientBuilder;
use tower::{BoxError, ServiceBuilder, ServiceExt};

const AMZ: Fault = Fault::Hinted {
    status: 429,
    header: "x-amz-retry-after",
    value: "1500",
};
const MS: Fault = Fault::Hinted {
    status: 503,
    header: "retry-after-ms",
    value: "250",
};
const STOP: Fault = Fault::Hinted {
    status: 503,
    header: "x-should-retry",
    value: "false",
};

/// The charge for `order`, sent through the middleware: its final status.
async fn through_middleware(service: &Service, order: &str) -> u16 {
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(quick()).idempotency_key_header())
        .build();
    client
        .post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(format!(r#"{{"order_id":"{order}","amount_cents":100}}"#))
        .send()
        .await
        .expect("an answer")
        .status()
        .as_u16()
}

/// The charge for `order`, sent through the tower layer: its final status.
async fn through_tower(service: &Service, order: &str) -> u16 {
    let http = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(quick()).http().idempotency_key_header())
        .map_err(BoxError::from)
        .service(http);
    let request = Request::post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(format!(
            r#"{{"order_id":"{order}","amount_cents":100}}"#
        ))))
        .expect("a valid request");
    client
        .oneshot(request)
        .await
        .expect("an answer")
        .status()
        .as_u16()
}

/// Each driver, one script: the statuses the calls ended with, and the requests each order saw.
async fn run(fault: Fault) -> Vec<(&'static str, u16, Vec<std::time::SystemTime>)> {
    let service = Service::start().await;
    service.script_for("by-middleware", vec![fault]);
    service.script_for("by-tower", vec![fault]);
    let m = through_middleware(&service, "by-middleware").await;
    let t = through_tower(&service, "by-tower").await;
    let walls = |order| service.seen_for(order).iter().map(|s| s.wall).collect();
    vec![
        ("middleware", m, walls("by-middleware")),
        ("tower", t, walls("by-tower")),
    ]
}

fn gap(walls: &[std::time::SystemTime]) -> Duration {
    walls[1].duration_since(walls[0]).expect("in order")
}

#[tokio::test]
async fn a_429_with_x_amz_retry_after_waits_its_milliseconds() {
    for (driver, status, walls) in run(AMZ).await {
        assert_eq!(status, StatusCode::CREATED.as_u16(), "{driver}");
        assert_eq!(walls.len(), 2, "{driver}: the 429, then the charge");
        assert!(
            gap(&walls) >= Duration::from_millis(1500),
            "{driver}: {:?}",
            gap(&walls)
        );
    }
}

#[tokio::test]
async fn retry_after_ms_waits_its_milliseconds() {
    for (driver, status, walls) in run(MS).await {
        assert_eq!(status, StatusCode::CREATED.as_u16(), "{driver}");
        assert_eq!(walls.len(), 2, "{driver}");
        let gap = gap(&walls);
        assert!(gap >= Duration::from_millis(250), "{driver}: {gap:?}");
    }
}

#[tokio::test]
async fn x_should_retry_false_on_a_503_sends_one_request() {
    for (driver, status, walls) in run(STOP).await {
        assert_eq!(
            status, 503,
            "{driver}: the server's own answer, not retried"
        );
        assert_eq!(walls.len(), 1, "{driver}: one request");
    }
}
