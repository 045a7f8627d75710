//! What a per-attempt `timeout` cancels when it drops the attempt's future, client by client,
//! counted where the work is done: an axum handler called with reqwest over HTTP/1.1, a
//! tonic-health handler called plainly and through `reattempt::tonic::GrpcRetryLayer` (which
//! sends `grpc-timeout`), and a long SQLite insert through a sqlx pool. docs/guide/deadlines.md's
//! table cites each test.
//!
//! Each server handler counts what it started, what it finished, and what was dropped before it
//! finished (a guard's `Drop`), so the test waits for every started handler to have settled one
//! way or the other (polling, not sleeping) and then reads which. Real clock and real sockets:
//! each test takes about a second (a handler's 1 s of work, or the SQLite statement).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reattempt::Transient as _;
use reattempt::retryable;
use reattempt::tonic::{GrpcRetryLayer, GrpcRetryService, ServiceConfig};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{ConnectOptions as _, Connection as _};
use tonic::codegen::tokio_stream::Stream;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_layer::Layer as _;

/// How long each handler works: five times the attempts' `timeout`.
const WORK: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------------
// The server side's counters.

/// What the handlers of one test started, finished, and had dropped before the end.
#[derive(Default)]
struct Counts {
    started: AtomicUsize,
    finished: AtomicUsize,
    dropped: AtomicUsize,
    /// How long after its start each dropped handler was dropped.
    dropped_after: Mutex<Vec<Duration>>,
    /// The `grpc-timeout` each gRPC handler was sent.
    grpc_timeouts: Mutex<Vec<Option<String>>>,
}

impl Counts {
    /// One handler's work: counted as started, then `WORK` long, then counted as finished;
    /// counted as dropped if its future is dropped before.
    async fn work(&self) {
        self.started.fetch_add(1, SeqCst);
        let watch = Watch {
            counts: self,
            start: Instant::now(),
            finished: false,
        };
        tokio::time::sleep(WORK).await;
        watch.finish();
    }

    /// Waits until every handler that started has finished or been dropped (at most 3 s), and
    /// returns `(started, finished, dropped)`.
    async fn settled(&self) -> (usize, usize, usize) {
        let read = || {
            (
                self.started.load(SeqCst),
                self.finished.load(SeqCst),
                self.dropped.load(SeqCst),
            )
        };
        let wait = async {
            loop {
                let (started, finished, dropped) = read();
                if started > 0 && finished + dropped == started {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(3), wait)
            .await
            .unwrap_or_else(|_| panic!("handlers still running after 3 s: {:?}", read()));
        read()
    }

    fn dropped_after(&self) -> Vec<Duration> {
        self.dropped_after.lock().unwrap().clone()
    }
}

/// Counts its handler as finished, or as dropped if it goes before `finish`.
struct Watch<'a> {
    counts: &'a Counts,
    start: Instant,
    finished: bool,
}

impl Watch<'_> {
    fn finish(mut self) {
        self.finished = true;
        self.counts.finished.fetch_add(1, SeqCst);
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.counts
                .dropped_after
                .lock()
                .unwrap()
                .push(self.start.elapsed());
            self.counts.dropped.fetch_add(1, SeqCst);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. reqwest to axum over HTTP/1.1.

#[retryable(max_attempts = 1, timeout = "200ms")]
async fn get(client: &reqwest::Client, url: &str) -> Result<String, reqwest::Error> {
    client
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await
}

async fn axum_server(counts: &Arc<Counts>) -> SocketAddr {
    let counts = Arc::clone(counts);
    let app = axum::Router::new().route(
        "/slow",
        axum::routing::get(move || {
            let counts = Arc::clone(&counts);
            async move {
                counts.work().await;
                "done"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// reqwest does not put back a connection whose request was dropped: it closes it. hyper's
/// HTTP/1.1 server (under `axum::serve`) reads the connection while a handler runs, and at the
/// client's close (an EOF; hyper allows no half-closed connection by default) it closes the
/// connection and drops the handler's future: the handler stops at its `.await`, near the
/// client's timeout, and never finishes.
#[tokio::test]
async fn reqwest_to_axum_http1_the_closed_connection_drops_the_handler() {
    let counts = Arc::new(Counts::default());
    let addr = axum_server(&counts).await;
    let client = reqwest::Client::new();

    let start = Instant::now();
    let err = get(&client, &format!("http://{addr}/slow"))
        .await
        .unwrap_err();
    // The attempt's timeout, as reqwest's error (feature `reqwest`): a synthetic 504.
    assert_eq!(
        err.status(),
        Some(reqwest::StatusCode::GATEWAY_TIMEOUT),
        "{err}"
    );
    let (started, finished, dropped) = counts.settled().await;
    let after = counts.dropped_after();
    eprintln!(
        "reqwest/axum: started {started}, finished {finished}, dropped {dropped} after {after:?}, \
         settled at {:?}",
        start.elapsed()
    );
    assert_eq!((started, finished, dropped), (1, 0, 1));
    assert!(
        after[0] < WORK / 2,
        "dropped near the client's timeout: {after:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. tonic: a tonic-health server whose `check` works for 1 s.

struct Slow(Arc<Counts>);

#[tonic::async_trait]
impl Health for Slow {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let timeout = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.0.grpc_timeouts.lock().unwrap().push(timeout);
        self.0.work().await;
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not used"))
    }
}

/// A tonic-health server whose `check` is `Slow`, and a channel to it.
async fn tonic_server(counts: &Arc<Counts>) -> (SocketAddr, Channel) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = HealthServer::new(Slow(Arc::clone(counts)));
    let incoming = tonic::codegen::tokio_stream::wrappers::TcpListenerStream::new(listener);
    tokio::spawn(async move {
        Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await
            .unwrap();
    });
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    (addr, channel)
}

#[retryable(max_attempts = 1, timeout = "200ms")]
async fn check(client: &mut HealthClient<Channel>) -> Result<ServingStatus, Status> {
    let reply = client.check(HealthCheckRequest::default()).await?;
    Ok(reply.into_inner().status())
}

/// A plain `#[retryable(timeout)]` sends no `grpc-timeout`, but dropping the attempt drops
/// tonic's response future, whose HTTP/2 stream is reset (`RST_STREAM`): hyper's HTTP/2 server
/// drops the handler's future when its stream is reset, so the handler stops at its `.await`.
#[tokio::test]
async fn tonic_plain_the_reset_stream_drops_the_handler() {
    let counts = Arc::new(Counts::default());
    let mut client = HealthClient::new(tonic_server(&counts).await.1);

    let start = Instant::now();
    let status = check(&mut client).await.unwrap_err();
    assert!(status.is_timeout(), "{status:?}");
    let (started, finished, dropped) = counts.settled().await;
    let after = counts.dropped_after();
    eprintln!(
        "tonic plain: started {started}, finished {finished}, dropped {dropped} after {after:?}, \
         settled at {:?}",
        start.elapsed()
    );
    assert_eq!((started, finished, dropped), (1, 0, 1));
    assert_eq!(
        *counts.grpc_timeouts.lock().unwrap(),
        [None],
        "no grpc-timeout sent"
    );
    assert!(
        after[0] < WORK / 2,
        "dropped near the client's timeout: {after:?}"
    );
}

/// Through the gRPC layer with a method `timeout` of 200 ms (from the service config), each
/// attempt carries `grpc-timeout`, which tonic's server enforces itself by dropping the
/// handler's future at that time.
#[tokio::test]
async fn tonic_grpc_layer_grpc_timeout_drops_the_handler() {
    let counts = Arc::new(Counts::default());
    let (_, channel) = tonic_server(&counts).await;
    let config =
        ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{}], "timeout": "0.2s"}]}"#)
            .unwrap();
    let mut client: HealthClient<GrpcRetryService<Channel>> =
        HealthClient::new(GrpcRetryLayer::from_service_config(config).layer(channel));

    let start = Instant::now();
    let status = client
        .check(HealthCheckRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    let (started, finished, dropped) = counts.settled().await;
    let after = counts.dropped_after();
    let sent = counts.grpc_timeouts.lock().unwrap().clone();
    eprintln!(
        "tonic layer: started {started}, finished {finished}, dropped {dropped} after {after:?}, \
         grpc-timeout {sent:?}, settled at {:?}",
        start.elapsed()
    );
    assert_eq!((started, finished, dropped), (1, 0, 1));
    assert_eq!(sent.len(), 1);
    assert!(sent[0].is_some(), "grpc-timeout sent");
    assert!(after[0] < WORK / 2, "dropped near the deadline: {after:?}");
}

// ---------------------------------------------------------------------------------------------
// 3. sqlx with SQLite: one long insert.

/// Rows the insert writes: enough for about a second on a slow machine.
const ROWS: i64 = 1_000_000;

#[retryable(max_attempts = 1, timeout = "100ms")]
async fn insert_many(pool: &SqlitePool) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO t (x) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c \
         WHERE x < ?) SELECT x FROM c",
    )
    .bind(ROWS)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// sqlx runs SQLite on a worker thread per connection: dropping the attempt does not stop the
/// statement the worker is running. It runs to its end and commits, and the pool's connection
/// serves its next query only after that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlx_sqlite_the_statement_runs_on_and_commits() {
    let dir = tempfile::tempdir().unwrap();
    // WAL, so that a reader on another connection sees the last commit while the insert runs.
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("t.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options.clone())
        .await
        .unwrap();
    // A temporary table marks the pool's one connection (a fresh connection does not have it).
    sqlx::raw_sql(
        "CREATE TABLE t (x INTEGER NOT NULL); CREATE TEMP TABLE mark (x); \
         INSERT INTO mark VALUES (1)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let mut reader = options.connect().await.unwrap();

    let start = Instant::now();
    let err = insert_many(&pool).await.unwrap_err();
    let timed_out = start.elapsed();
    assert!(err.is_timeout(), "{err}");

    // Right after the timeout, outside the pool: nothing committed yet (the statement runs).
    let seen_outside: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
        .fetch_one(&mut reader)
        .await
        .unwrap();
    // Through the pool, on the same connection (it reads the mark): this waits for the
    // statement in flight.
    let asked = Instant::now();
    let seen_in_pool: i64 = sqlx::query_scalar("SELECT (SELECT COUNT(*) FROM t) FROM temp.mark")
        .fetch_one(&pool)
        .await
        .unwrap();
    let waited = asked.elapsed();
    eprintln!(
        "sqlx SQLite: timed out at {timed_out:?}; outside the pool {seen_outside} rows; the \
         pool's next query waited {waited:?} and saw {seen_in_pool} rows ({:?} after the start)",
        start.elapsed()
    );
    // The same connection saw every row that was not there at the timeout: its next query ran
    // after the dropped statement had ended and committed. (How long it waited depends on the
    // machine: 0.7 to 1.2 s on a slow one.)
    assert_eq!(seen_outside, 0, "still running at the timeout");
    assert_eq!(
        seen_in_pool, ROWS,
        "the dropped statement ran to its end and committed"
    );
    reader.close().await.unwrap();
}

/// What tonic's server does with `grpc-timeout` on its own, where no client resets the stream:
/// a raw HTTP/2 client (h2; a tonic client would enforce the header itself and reset) sends it
/// and waits. The server drops the handler at that time and answers CANCELLED "Timeout
/// expired" itself, so a server behind a proxy that does not pass a reset on still stops.
#[tokio::test]
async fn tonic_server_enforces_grpc_timeout_by_dropping_the_handler() {
    let counts = Arc::new(Counts::default());
    let (addr, _) = tonic_server(&counts).await;
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (send, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut send = send.ready().await.unwrap();
    let request = http::Request::post(format!("http://{addr}/grpc.health.v1.Health/Check"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", "200m")
        .body(())
        .unwrap();

    let start = Instant::now();
    let (response, mut body) = send.send_request(request, false).unwrap();
    // One message, uncompressed, of 0 bytes (an empty HealthCheckRequest).
    body.send_data(bytes::Bytes::from_static(&[0; 5]), true)
        .unwrap();
    let response = response.await.unwrap();
    let answered = start.elapsed();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (code, message) = (header("grpc-status"), header("grpc-message"));
    let (started, finished, dropped) = counts.settled().await;
    let after = counts.dropped_after();
    eprintln!(
        "tonic server, grpc-timeout alone: grpc-status {code:?} {message:?} at {answered:?}; \
         started {started}, finished {finished}, dropped {dropped} after {after:?}"
    );
    assert_eq!(code.as_deref(), Some("1"), "CANCELLED");
    assert_eq!(message.as_deref(), Some("Timeout%20expired"));
    assert_eq!((started, finished, dropped), (1, 0, 1));
    assert!(
        after[0] < WORK / 2,
        "dropped near the grpc-timeout: {after:?}"
    );
    assert!(
        answered < WORK / 2,
        "answered at the grpc-timeout: {answered:?}"
    );
}
