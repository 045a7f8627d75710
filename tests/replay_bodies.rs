//! Streaming request bodies, end to end over real HTTP on loopback, through both client drivers:
//! the tower layer (`ReplayBodyLayer` in front of `RetryLayer::http()`, hyper-util's client) and
//! the reqwest middleware (`RetryMiddleware::replay_cap`). A body that fits the cap is recorded
//! as the first attempt sends it and replayed, byte for byte, to the next; one past the cap is
//! sent once and its outcome returned (the call is committed to that attempt).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::put;
use bytes::Bytes;
use http::{Request, StatusCode};
use hyper::body::Frame;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::http::ReplayBody;
use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::tower::{ReplayBodyLayer, RetryLayer};
use reattempt::{HedgeAfter, Jitter, RetryPolicy};
use tokio::sync::mpsc;
use tower::{BoxError, ServiceBuilder, ServiceExt};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// A server on loopback that reads each `PUT /upload` body whole, keeps it, and answers the
/// next status of its script (201 once the script is out).
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Bytes>>>,
}

#[derive(Clone)]
struct Script {
    statuses: Arc<Mutex<VecDeque<u16>>>,
    /// How long the first request's answer waits (a slow replica, for hedging).
    first_delay: Duration,
    seen: Arc<Mutex<Vec<Bytes>>>,
}

async fn upload(State(script): State<Script>, body: Bytes) -> StatusCode {
    let first = {
        let mut seen = script.seen.lock().unwrap();
        seen.push(body);
        seen.len() == 1
    };
    if first {
        tokio::time::sleep(script.first_delay).await;
    }
    let status = script.statuses.lock().unwrap().pop_front().unwrap_or(201);
    StatusCode::from_u16(status).unwrap()
}

impl Server {
    async fn start(statuses: &[u16]) -> Server {
        Server::start_slow_first(statuses, Duration::ZERO).await
    }

    async fn start_slow_first(statuses: &[u16], first_delay: Duration) -> Server {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Script {
            statuses: Arc::new(Mutex::new(statuses.iter().copied().collect())),
            first_delay,
            seen: Arc::clone(&seen),
        };
        let app = Router::new()
            .route("/upload", put(upload))
            .layer(DefaultBodyLimit::disable())
            .with_state(script);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/upload", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Server { url, seen }
    }

    fn seen(&self) -> Vec<Bytes> {
        self.seen.lock().unwrap().clone()
    }
}

/// `len` bytes of a pattern (not a repeated byte: a replay out of order would show).
fn source(len: usize) -> Bytes {
    (0..len)
        .map(|i| u8::try_from((i * 7 + i / 251) % 256).unwrap())
        .collect::<Vec<u8>>()
        .into()
}

/// A stream of `data` in 16 KiB chunks, fed by a task through a channel (not `Clone`; it
/// yields `Pending` between chunks).
struct Chunks(mpsc::Receiver<Bytes>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}

fn stream(data: &Bytes) -> Chunks {
    stream_paced(data, Duration::ZERO)
}

/// As [`stream`], waiting `pace` between chunks.
fn stream_paced(data: &Bytes, pace: Duration) -> Chunks {
    let (tx, rx) = mpsc::channel(2);
    let data = data.clone();
    tokio::spawn(async move {
        for start in (0..data.len()).step_by(16 * KIB) {
            let end = (start + 16 * KIB).min(data.len());
            if tx.send(data.slice(start..end)).await.is_err() {
                return;
            }
            if pace.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(pace).await;
            }
        }
    });
    Chunks(rx)
}

/// The same stream as an `http_body::Body` (for hyper-util's client).
struct Upload(Chunks);

impl hyper::body::Body for Upload {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        futures_core::Stream::poll_next(Pin::new(&mut self.0), cx)
            .map(|chunk| chunk.map(|chunk| chunk.map(Frame::data)))
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(10))
        .jitter(Jitter::None)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// One `PUT` of `data`, streamed, through the tower layer with a replay cap of `cap`.
async fn through_tower(server: &Server, data: &Bytes, cap: usize) -> StatusCode {
    let http = Client::builder(TokioExecutor::new()).build_http::<ReplayBody<Upload>>();
    let client = ServiceBuilder::new()
        .layer(ReplayBodyLayer::new(cap))
        .layer(RetryLayer::new(policy()).http().name("upload"))
        .map_err(BoxError::from)
        .service(http);
    let request = Request::put(&server.url)
        .body(Upload(stream(data)))
        .unwrap();
    client.oneshot(request).await.unwrap().status()
}

/// One `PUT` of `data`, streamed, through the reqwest middleware with a replay cap of `cap`.
async fn through_middleware(server: &Server, data: &Bytes, cap: usize) -> StatusCode {
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(policy())
                .replay_cap(cap)
                .name("upload"),
        )
        .build();
    let response = client
        .put(&server.url)
        .body(reqwest::Body::wrap_stream(stream(data)))
        .send()
        .await
        .unwrap();
    StatusCode::from_u16(response.status().as_u16()).unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Driver {
    Tower,
    Middleware,
}

async fn send(driver: Driver, server: &Server, data: &Bytes, cap: usize) -> StatusCode {
    match driver {
        Driver::Tower => through_tower(server, data, cap).await,
        Driver::Middleware => through_middleware(server, data, cap).await,
    }
}

const DRIVERS: [Driver; 2] = [Driver::Tower, Driver::Middleware];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_mib_stream_under_a_2_mib_cap_is_replayed_identically() {
    let data = source(MIB);
    for driver in DRIVERS {
        let server = Server::start(&[503]).await;
        let status = send(driver, &server, &data, 2 * MIB).await;
        assert_eq!(status, StatusCode::CREATED, "{driver:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 2, "{driver:?}: 503, then 201");
        assert_eq!(
            seen[0], data,
            "{driver:?}: the first attempt sent the source"
        );
        assert_eq!(seen[1], seen[0], "{driver:?}: the replay is identical");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_kib_stream_over_a_64_kib_cap_is_sent_once() {
    let data = source(100 * KIB);
    for driver in DRIVERS {
        let server = Server::start(&[503]).await;
        let status = send(driver, &server, &data, 64 * KIB).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{driver:?}: committed to the one attempt, its answer returned"
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{driver:?}: sent once");
        assert_eq!(seen[0], data, "{driver:?}: sent whole");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_exactly_at_the_cap_is_retried() {
    let data = source(64 * KIB);
    for driver in DRIVERS {
        let server = Server::start(&[503, 503]).await;
        let status = send(driver, &server, &data, 64 * KIB).await;
        assert_eq!(status, StatusCode::CREATED, "{driver:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 3, "{driver:?}: 503, 503, then 201");
        assert!(seen.iter().all(|b| *b == data), "{driver:?}: identical");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_over_the_cap_is_sent_once() {
    let data = source(64 * KIB + 1);
    for driver in DRIVERS {
        let server = Server::start(&[503]).await;
        let status = send(driver, &server, &data, 64 * KIB).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{driver:?}");
        assert_eq!(server.seen().len(), 1, "{driver:?}: sent once");
    }
}

/// A hedge starts while the first attempt still streams the body: both copies read the one
/// stream at once (the one ahead reads it, the other waits for it and is woken), and both
/// reach the server whole and identical; the hedge's answer wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hedge_streams_alongside_the_first_attempt() {
    let data = source(256 * KIB);
    let server = Server::start_slow_first(&[], Duration::from_secs(2)).await;
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(40)))
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let http = Client::builder(TokioExecutor::new()).build_http::<ReplayBody<Upload>>();
    let client = ServiceBuilder::new()
        .layer(ReplayBodyLayer::new(MIB))
        .layer(RetryLayer::new(policy).http())
        .map_err(BoxError::from)
        .service(http);
    // 16 chunks, 10 ms apart: the hedge (at 40 ms) starts mid-stream.
    let request = Request::put(&server.url)
        .body(Upload(stream_paced(&data, Duration::from_millis(10))))
        .unwrap();
    let started = std::time::Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(10), client.oneshot(request))
        .await
        .expect("a copy was never woken")
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the hedge answered"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "the first attempt and its hedge");
    assert!(seen.iter().all(|b| *b == data), "both whole and identical");
}
