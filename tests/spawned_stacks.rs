//! Every client stack the guide documents compiles and runs inside `tokio::spawn`: servers spawn
//! their calls, so a stack whose future is `Send` only for some lifetimes (rustc checks a
//! spawned block's types for every lifetime) is unusable there. Each test is the guide's stack,
//! awaited in a spawned task against the fault-injecting service on loopback, counting on the
//! server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::testing::http::{Fault, RetryAfter, Service};
use reattempt::tower::{ReplayBodyLayer, RetryLayer};
use reattempt::{CircuitBreaker, RetryBudget, RetryPolicy, retryable};
use tower::{BoxError, ServiceBuilder, ServiceExt};

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(4)
        .delay(Duration::from_millis(5))
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

fn charge_body(order: &str) -> String {
    format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#)
}

/// The HTTP chapter's tower stack: `.http()` over hyper-util's client, errors boxed.
#[tokio::test]
async fn the_tower_http_stack_runs_in_a_spawned_task() {
    let service = Service::start().await;
    service.script_for(
        "o-42",
        [
            Fault::Unavailable,
            Fault::RateLimited(RetryAfter::Seconds(0)),
        ],
    );
    let client = ServiceBuilder::new()
        .layer(
            RetryLayer::new(policy())
                .http()
                .idempotency_key_header()
                .name("charge"),
        )
        .map_err(BoxError::from)
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let url = format!("{}/charges", service.url());
    let status = tokio::spawn(async move {
        let request = Request::post(url)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(charge_body("o-42"))))?;
        let response = client.oneshot(request).await?;
        Ok::<_, BoxError>(response.status())
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        service.seen_for("o-42").len(),
        3,
        "two failures, then the charge"
    );
    assert_eq!(service.effects("o-42"), 1);
}

/// The same stack with the guards as `Arc`s and a streaming body made replayable by
/// `ReplayBodyLayer`, as the guards and replayable-bodies sections write it.
#[tokio::test]
async fn a_guarded_stack_with_a_replayed_stream_runs_in_a_spawned_task() {
    let service = Service::start().await;
    service.script_for("o-43", [Fault::Unavailable]);
    let breaker = Arc::new(CircuitBreaker::builder().build().unwrap());
    let budget = Arc::new(RetryBudget::builder().build().unwrap());
    let client = ServiceBuilder::new()
        .layer(ReplayBodyLayer::new(64 * 1024))
        .layer(
            RetryLayer::new(policy())
                .http()
                .idempotency_key_header()
                .circuit_breaker(Arc::clone(&breaker))
                .budget(Arc::clone(&budget)),
        )
        .map_err(BoxError::from)
        .service(
            Client::builder(TokioExecutor::new())
                .build_http::<reattempt::http::ReplayBody<StreamBody<ChunkStream>>>(),
        );
    let url = format!("{}/charges", service.url());
    let (status, body) = tokio::spawn(async move {
        let chunks = charge_body("o-43")
            .into_bytes()
            .chunks(7)
            .map(Bytes::copy_from_slice)
            .collect();
        let request = Request::post(url)
            .header("content-type", "application/json")
            .body(StreamBody::new(ChunkStream(chunks)))?;
        let response = client.oneshot(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok::<_, BoxError>((status, body))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body:?}");
    assert_eq!(service.seen_for("o-43").len(), 2);
    assert_eq!(service.effects("o-43"), 1);
}

/// A streaming body: its chunks, one frame each.
struct ChunkStream(std::collections::VecDeque<Bytes>);

impl futures_core::Stream for ChunkStream {
    type Item = Result<http_body::Frame<Bytes>, std::io::Error>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::task::Poll::Ready(
            self.0
                .pop_front()
                .map(|chunk| Ok(http_body::Frame::data(chunk))),
        )
    }
}

/// A `POST` to a refused port, through the spawned `.http()` stack with boxed errors: the layer
/// still sees through the box that the request never left (every attempt made), which it reads
/// without a `'static` bound on the error.
#[tokio::test]
async fn a_spawned_stack_still_sees_a_refused_connection_through_the_box() {
    let url = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        format!(
            "http://{}/charges",
            listener.local_addr().expect("an address")
        )
    };
    // Attempts counted below the layer: a hook closure typed `&BoxError` would itself be the
    // kind of higher-ranked `Send` failure this file guards against (a rustc limit, see the
    // tower chapter), so none is used here.
    let attempts = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&attempts);
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(policy()).http())
        .map_err(BoxError::from)
        .map_request(move |request: Request<Full<Bytes>>| {
            counter.fetch_add(1, Ordering::SeqCst);
            request
        })
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let out = tokio::spawn(async move {
        let request = Request::post(url).body(Full::new(Bytes::from(charge_body("o-1"))))?;
        client.oneshot(request).await.map(|r| r.status())
    })
    .await
    .unwrap();
    assert!(out.is_err(), "{out:?}");
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        4,
        "a POST never sent is sent again"
    );
}

/// The reqwest middleware, as the HTTP chapter builds it.
#[tokio::test]
async fn the_reqwest_middleware_runs_in_a_spawned_task() {
    let service = Service::start().await;
    service.script_for("o-7", [Fault::Unavailable]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(policy())
                .idempotency_key_header()
                .name("charge"),
        )
        .build();
    let url = format!("{}/charges", service.url());
    let status = tokio::spawn(async move {
        client
            .post(url)
            .header("content-type", "application/json")
            .body(charge_body("o-7"))
            .send()
            .await
            .map(|r| r.status())
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, 201);
    assert_eq!(service.seen_for("o-7").len(), 2);
    assert_eq!(service.effects("o-7"), 1);
}

/// `#[retryable]` over a reqwest call that gives `reqwest::Error` as it is.
#[retryable(max_attempts = 4, delay = "5ms", idempotent = true)]
async fn price(client: &reqwest::Client, url: &str) -> Result<String, reqwest::Error> {
    client
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await
}

#[tokio::test]
async fn the_attribute_over_reqwest_runs_in_a_spawned_task() {
    let service = Service::start().await;
    service.script_for("tea", [Fault::Unavailable]);
    let url = format!("{}/prices/tea", service.url());
    let client = reqwest::Client::new();
    let out = tokio::spawn(async move { price(&client, &url).await })
        .await
        .unwrap();
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(service.seen_for("tea").len(), 2, "the 503, then the price");
}

/// A hook that names the error type, in a spawned task: with an error type that has no lifetime
/// (here `io::Error`; `BoxError` is `Box<dyn Error + Send + Sync + 'static>`, whose lifetime
/// rustc loses in a spawned block's `Send` check, rust-lang/rust#110338) it compiles and runs.
#[tokio::test]
async fn a_hook_typed_with_an_error_without_lifetimes_runs_in_a_spawned_task() {
    let service = Service::start().await;
    service.script_for("o-44", [Fault::Unavailable, Fault::Reset]);
    let retries = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&retries);
    let client = ServiceBuilder::new()
        .layer(
            RetryLayer::new(policy())
                .http()
                .idempotency_key_header()
                .on_retry(
                    move |_: &std::io::Error, _: &reattempt::RetryContext, _: Duration| {
                        counter.fetch_add(1, Ordering::SeqCst);
                    },
                ),
        )
        .map_err(std::io::Error::other)
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let url = format!("{}/charges", service.url());
    let status = tokio::spawn(async move {
        let request = Request::post(url).body(Full::new(Bytes::from(charge_body("o-44"))))?;
        let response = client.oneshot(request).await?;
        Ok::<_, BoxError>(response.status())
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        retries.load(Ordering::SeqCst),
        1,
        "on_retry sees the reset (an error)"
    );
    assert_eq!(service.effects("o-44"), 1);
}
