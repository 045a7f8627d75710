//! A fault-injecting HTTP service for the examples and the end-to-end tests: a real axum server
//! on `127.0.0.1`, port 0, started by the program that uses it, whose requests meet the faults a
//! script says — a hang, a response lost after the side effect was applied, a 503, a 429 with
//! `Retry-After`, a reset connection — and which applies each side effect once per
//! `Idempotency-Key`, as the IETF Idempotency-Key draft describes.
//!
//! Included by the examples with `#[path = "support/mod.rs"] mod support;` and by the tests with
//! `#[path = "../examples/support/mod.rs"]`; each uses a part of it.
//!
//! | route | body | answer | side effect |
//! |---|---|---|---|
//! | `POST /charges` | `{"order_id": "o-1", "amount_cents": 1250}` | 201 `{"charge_id", "order_id", "amount_cents"}` | a charge, counted per `order_id` |
//! | `POST /messages` | `{"to": "+15550100", "text": "hi"}` | 202 `{"message_id", "to"}` | a delivery, counted per `to` |
//! | `GET /prices/{sku}` | — | 200 `{"sku", "price_cents"}` | none |
//!
//! A body that does not parse or does not validate (an amount ≤ 0, a phone number that is not
//! `+` and 8 to 15 digits) is a 400 with `{"error": …}` and no side effect. A request with an
//! `Idempotency-Key` seen before (on the same route) gets the stored answer back with
//! `Idempotent-Replayed: true` and no new side effect; the same key with another body is a 422.
//!
//! Faults are drawn per request: first from the script of the request's subject (the `order_id`,
//! the `to` or the sku), then from the global script, then the default fault (normally
//! [`Fault::Pass`]; [`Service::set_default`] makes the service fail every request).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::{IncomingStream, Listener};
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The longest a hung request waits before its connection is reset (when nothing stopped it).
const HANG_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- faults

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No fault: the request is served (and its side effect applied once per key).
    Pass,
    /// No answer and no side effect, until the client gives up (or the service stops): a hung
    /// upstream. Only a client-side timeout gets the caller out.
    Hang,
    /// The side effect is applied (and stored under the key), then no answer ever comes: the
    /// worst case for a non-idempotent call.
    LoseResponse,
    /// The side effect is applied, then the connection is reset instead of answering.
    CommitThenReset,
    /// The connection is reset before anything is done.
    Reset,
    /// `503 Service Unavailable` (a rolling deploy), nothing done.
    Unavailable,
    /// `429 Too Many Requests` with a `Retry-After` header, nothing done.
    RateLimited(RetryAfter),
}

/// The form of a `Retry-After` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: 1` (delta-seconds).
    Seconds(u64),
    /// `Retry-After: Sun, 06 Nov 1994 08:49:37 GMT`: at least this long from now, rounded up to
    /// the next whole second (the header's resolution).
    Date(Duration),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Pass => f.write_str("no fault"),
            Fault::Hang => f.write_str("hang"),
            Fault::LoseResponse => f.write_str("commit, then lose the response"),
            Fault::CommitThenReset => f.write_str("commit, then reset the connection"),
            Fault::Reset => f.write_str("connection reset"),
            Fault::Unavailable => f.write_str("503"),
            Fault::RateLimited(RetryAfter::Seconds(s)) => write!(f, "429, Retry-After: {s}"),
            Fault::RateLimited(RetryAfter::Date(d)) => write!(f, "429, Retry-After: now + {d:?}"),
        }
    }
}

// ---------------------------------------------------------------- what the service saw

/// How the service ended one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Served, and the side effect was applied (a first request for its key, or no key).
    Applied,
    /// Served from the idempotency store: the stored answer, no new side effect.
    Replayed,
    /// Served without a side effect (a read).
    Read,
    /// Answered with this status without doing anything (a 503, a 429, a 400, a 422).
    Status(u16),
    /// No answer: hung until the client gave up.
    NoAnswer,
    /// The connection was reset.
    Reset,
}

/// One request, as the service saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When it arrived.
    pub at: Instant,
    /// When it arrived, by the wall clock (which `Retry-After` dates are in).
    pub wall: SystemTime,
    /// `POST /charges`, `GET /prices/tea`, …
    pub route: String,
    /// The `order_id`, the `to` or the sku, when the request had one.
    pub subject: Option<String>,
    /// Its `Idempotency-Key` header.
    pub key: Option<String>,
    /// The fault it met.
    pub fault: Fault,
    /// How it ended (`Applied` also for a commit whose answer was lost or reset).
    pub outcome: Outcome,
    /// For a 429: the wall-clock instant before which a retry is too early.
    pub retry_not_before: Option<SystemTime>,
}

// ---------------------------------------------------------------- state

/// An answer kept for replay under an idempotency key.
#[derive(Debug, Clone)]
struct Stored {
    body_of_request: Bytes,
    status: StatusCode,
    body: String,
}

/// The service's state, behind one mutex (never held across an await).
#[derive(Debug, Default)]
struct Records {
    /// Faults per subject, drawn first.
    scripts: HashMap<String, VecDeque<Fault>>,
    /// Faults for any request, drawn next.
    script: VecDeque<Fault>,
    /// The fault when no script has one (`None`: [`Fault::Pass`]).
    default: Option<Fault>,
    /// The idempotency store: (route, key) → the first answer.
    store: HashMap<(String, String), Stored>,
    /// Side effects applied, per subject.
    effects: HashMap<String, u32>,
    /// The last id handed out (`ch_1`, `msg_2`, …).
    next_id: u64,
    /// Every request, in order of arrival.
    seen: Vec<Seen>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<Records>,
    narrate: AtomicBool,
    /// Flips to `true` when the service stops: hung requests end.
    stopping: watch::Sender<bool>,
    /// Every connection accepted, so that stopping can reset them all.
    conns: Mutex<Vec<Weak<Kill>>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Records> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn say(&self, what: impl std::fmt::Display) {
        if self.narrate.load(SeqCst) {
            println!("            server: {what}");
        }
    }

    fn kill_all(&self) {
        let conns = std::mem::take(&mut *self.conns.lock().unwrap_or_else(PoisonError::into_inner));
        for kill in conns.iter().filter_map(Weak::upgrade) {
            kill.kill();
        }
    }
}

// ---------------------------------------------------------------- the service

/// The running service. Dropping it stops the server and resets its connections.
#[derive(Debug)]
pub struct Service {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl Service {
    /// Binds `127.0.0.1:0` and serves until dropped (or stopped).
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start() -> Service {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            state: Mutex::new(Records::default()),
            narrate: AtomicBool::new(false),
            stopping: watch::channel(false).0,
            conns: Mutex::new(Vec::new()),
        });
        let task = Some(spawn(listener, Arc::clone(&shared)));
        Service { addr, shared, task }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Prints a line for each request (`server: …`), for the examples' timelines.
    pub fn narrate(&self, on: bool) {
        self.shared.narrate.store(on, SeqCst);
    }

    /// Appends faults to the global script: the next requests (of any subject without a script
    /// of its own) meet them in order.
    pub fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.lock().script.extend(faults);
    }

    /// Appends faults to the script of one subject (an `order_id`, a `to`, a sku).
    pub fn script_for(&self, subject: &str, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .lock()
            .scripts
            .entry(subject.to_owned())
            .or_default()
            .extend(faults);
    }

    /// The fault of every request that no script covers ([`Fault::Pass`] at first):
    /// `set_default(Fault::Unavailable)` is a dependency that answers 503 to everything.
    pub fn set_default(&self, fault: Fault) {
        self.shared.lock().default = Some(fault);
    }

    /// Side effects applied for a subject (charges of an order, messages delivered to a number).
    pub fn effects(&self, subject: &str) -> u32 {
        self.shared
            .lock()
            .effects
            .get(subject)
            .copied()
            .unwrap_or(0)
    }

    /// Side effects applied in all.
    pub fn total_effects(&self) -> u32 {
        self.shared.lock().effects.values().sum()
    }

    /// Every request received, in order of arrival.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().seen.clone()
    }

    /// The requests received for one subject, in order of arrival.
    pub fn seen_for(&self, subject: &str) -> Vec<Seen> {
        self.shared
            .lock()
            .seen
            .iter()
            .filter(|s| s.subject.as_deref() == Some(subject))
            .cloned()
            .collect()
    }

    /// Requests received so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().seen.len()
    }

    /// Takes the service fully down: stops accepting (the port refuses connections) and resets
    /// every open connection. Its state (store, counts, scripts) is kept for [`restart`].
    ///
    /// [`restart`]: Service::restart
    pub async fn stop(&mut self) {
        self.shared.stopping.send_replace(true);
        self.shared.kill_all();
        if let Some(task) = self.task.take() {
            // Graceful shutdown ends once the killed connections are gone; do not wait for long.
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }

    /// Brings a stopped service back on the same port.
    ///
    /// # Panics
    /// When the port cannot be bound again within a second.
    pub async fn restart(&mut self) {
        assert!(self.task.is_none(), "the service is running");
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                Err(_) if tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("rebinding {}: {e}", self.addr),
            }
        };
        self.shared.stopping.send_replace(false);
        self.task = Some(spawn(listener, Arc::clone(&self.shared)));
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.shared.stopping.send_replace(true);
        self.shared.kill_all();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn spawn(listener: TcpListener, shared: Arc<Shared>) -> JoinHandle<()> {
    let app = Router::new()
        .route("/charges", post(charge))
        .route("/messages", post(message))
        .route("/prices/{sku}", get(price))
        .with_state(Arc::clone(&shared));
    let mut stopping = shared.stopping.subscribe();
    let listener = FaultyListener {
        inner: listener,
        shared,
    };
    tokio::spawn(async move {
        let serve = axum::serve(listener, app.into_make_service_with_connect_info::<Conn>())
            .with_graceful_shutdown(async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            });
        // `serve` logs and retries accept errors itself; it only ends on shutdown.
        let _ = serve.await;
    })
}

// ---------------------------------------------------------------- handlers

#[derive(Deserialize)]
struct ChargeBody {
    order_id: String,
    amount_cents: i64,
}

#[derive(Deserialize)]
struct MessageBody {
    to: String,
    text: String,
}

/// A request reduced to what the service needs: its subject, and either the status to answer
/// with when its side effect is applied or why it is invalid.
struct Parsed {
    subject: Option<String>,
    valid: Result<StatusCode, String>,
}

async fn charge(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (parsed, order, amount) = match serde_json::from_slice::<ChargeBody>(&body) {
        Err(e) => (
            Parsed {
                subject: None,
                valid: Err(format!("malformed charge: {e}")),
            },
            String::new(),
            0,
        ),
        Ok(c) => {
            let valid = if c.amount_cents <= 0 {
                Err(format!(
                    "amount_cents must be positive, got {}",
                    c.amount_cents
                ))
            } else if c.order_id.is_empty() {
                Err("order_id is empty".to_owned())
            } else {
                Ok(StatusCode::CREATED)
            };
            let subject = Some(c.order_id.clone());
            (Parsed { subject, valid }, c.order_id, c.amount_cents)
        }
    };
    handle(
        &shared,
        &conn,
        "POST /charges",
        &headers,
        body,
        parsed,
        move |id| {
            let said = format!("charged {order} {amount}¢ as ch_{id}");
            let answer =
                json!({"charge_id": format!("ch_{id}"), "order_id": order, "amount_cents": amount});
            (answer, said)
        },
    )
    .await
}

async fn message(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (parsed, to) = match serde_json::from_slice::<MessageBody>(&body) {
        Err(e) => (
            Parsed {
                subject: None,
                valid: Err(format!("malformed message: {e}")),
            },
            String::new(),
        ),
        Ok(m) => {
            let digits = m.to.strip_prefix('+').unwrap_or("");
            let valid = if !(8..=15).contains(&digits.len())
                || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                Err(format!("invalid phone number {:?}", m.to))
            } else if m.text.is_empty() {
                Err("text is empty".to_owned())
            } else {
                Ok(StatusCode::ACCEPTED)
            };
            let subject = Some(m.to.clone());
            (Parsed { subject, valid }, m.to)
        }
    };
    handle(
        &shared,
        &conn,
        "POST /messages",
        &headers,
        body,
        parsed,
        move |id| {
            let said = format!("delivered msg_{id} to {to}");
            (json!({"message_id": format!("msg_{id}"), "to": to}), said)
        },
    )
    .await
}

async fn price(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    Path(sku): Path<String>,
) -> Response {
    let route = format!("GET /prices/{sku}");
    let (fault, seen) = arrive(&shared, &route, Some(&sku), None);
    if let Some(early) = pre_app_fault(&shared, &conn, fault, seen).await {
        return early;
    }
    if matches!(fault, Fault::Hang | Fault::LoseResponse) {
        shared.say("hung");
        return hang(&shared, &conn, seen, Outcome::NoAnswer).await;
    }
    if fault == Fault::CommitThenReset {
        return reset(&shared, &conn, seen, Outcome::Reset);
    }
    // Prices: a few cents per letter, stable.
    let cents: u64 = 100 + sku.bytes().map(u64::from).sum::<u64>() % 900;
    record(&shared, seen, Outcome::Read, None);
    shared.say(format!("price of {sku}: {cents}¢"));
    (
        StatusCode::OK,
        axum::Json(json!({"sku": sku, "price_cents": cents})),
    )
        .into_response()
}

/// The part every write shares: fault, validation, idempotency store, side effect, answer.
async fn handle(
    shared: &Shared,
    conn: &Conn,
    route: &str,
    headers: &HeaderMap,
    body: Bytes,
    parsed: Parsed,
    answer: impl FnOnce(u64) -> (serde_json::Value, String),
) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (fault, seen) = arrive(shared, route, parsed.subject.as_deref(), key.as_deref());
    if let Some(early) = pre_app_fault(shared, conn, fault, seen).await {
        return early;
    }
    if fault == Fault::Hang {
        shared.say("hung (nothing done)");
        return hang(shared, conn, seen, Outcome::NoAnswer).await;
    }

    // The application: validate, then look the key up, then apply.
    let status = match parsed.valid {
        Err(why) => {
            record(shared, seen, Outcome::Status(400), None);
            shared.say(format!("400 Bad Request: {why}"));
            return error(StatusCode::BAD_REQUEST, &why);
        }
        Ok(status) => status,
    };
    let subject = parsed.subject.unwrap_or_default();
    let (status, text, did) = {
        let mut state = shared.lock();
        let stored = key
            .as_ref()
            .and_then(|k| state.store.get(&(route.to_owned(), k.clone())).cloned());
        if let Some(stored) = stored {
            if stored.body_of_request != body {
                drop(state);
                record(shared, seen, Outcome::Status(422), None);
                shared.say("422: this Idempotency-Key was used with another request body");
                return error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Idempotency-Key reused with a different request body",
                );
            }
            (stored.status, stored.body, None)
        } else {
            state.next_id += 1;
            let id = state.next_id;
            *state.effects.entry(subject.clone()).or_default() += 1;
            let (answer, said) = answer(id);
            let text = answer.to_string();
            if let Some(k) = &key {
                state.store.insert(
                    (route.to_owned(), k.clone()),
                    Stored {
                        body_of_request: body,
                        status,
                        body: text.clone(),
                    },
                );
            }
            (status, text, Some(said))
        }
    };
    let (did, outcome) = match did {
        Some(said) => (said, Outcome::Applied),
        None => (
            "replayed the stored answer for this key (no new side effect)".to_owned(),
            Outcome::Replayed,
        ),
    };
    match fault {
        Fault::LoseResponse => {
            shared.say(format!("{did}, then lost the response"));
            hang(shared, conn, seen, outcome).await
        }
        Fault::CommitThenReset => {
            shared.say(format!("{did}, then reset the connection"));
            reset(shared, conn, seen, outcome)
        }
        _ => {
            shared.say(format!("{did}; {}", status_line(status)));
            let replayed = outcome == Outcome::Replayed;
            record(shared, seen, outcome, None);
            let mut response = (
                status,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                text,
            )
                .into_response();
            if replayed {
                response
                    .headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
            }
            response
        }
    }
}

/// Logs the arrival and draws the request's fault; gives the fault and the log's index.
fn arrive(
    shared: &Shared,
    route: &str,
    subject: Option<&str>,
    key: Option<&str>,
) -> (Fault, usize) {
    let mut state = shared.lock();
    let scripted = subject
        .and_then(|s| state.scripts.get_mut(s))
        .and_then(VecDeque::pop_front);
    let fault = scripted
        .or_else(|| state.script.pop_front())
        .or(state.default)
        .unwrap_or(Fault::Pass);
    state.seen.push(Seen {
        at: Instant::now(),
        wall: SystemTime::now(),
        route: route.to_owned(),
        subject: subject.map(str::to_owned),
        key: key.map(str::to_owned),
        fault,
        outcome: Outcome::NoAnswer,
        retry_not_before: None,
    });
    (fault, state.seen.len() - 1)
}

fn record(shared: &Shared, seen: usize, outcome: Outcome, not_before: Option<SystemTime>) {
    let mut state = shared.lock();
    let entry = &mut state.seen[seen];
    entry.outcome = outcome;
    entry.retry_not_before = not_before;
}

/// The faults that strike before the application sees the request (a load balancer, the
/// network): an answer for them, or `None` to go on.
async fn pre_app_fault(
    shared: &Shared,
    conn: &Conn,
    fault: Fault,
    seen: usize,
) -> Option<Response> {
    match fault {
        Fault::Unavailable => {
            record(shared, seen, Outcome::Status(503), None);
            shared.say("503 Service Unavailable (nothing done)");
            Some(error(
                StatusCode::SERVICE_UNAVAILABLE,
                "deploying, try again",
            ))
        }
        Fault::RateLimited(form) => {
            let now = SystemTime::now();
            let (value, not_before) = match form {
                RetryAfter::Seconds(s) => (s.to_string(), now + Duration::from_secs(s)),
                RetryAfter::Date(d) => {
                    let at = ceil_to_second(now + d);
                    (httpdate::fmt_http_date(at), at)
                }
            };
            record(shared, seen, Outcome::Status(429), Some(not_before));
            shared.say(format!(
                "429 Too Many Requests, Retry-After: {value} (nothing done)"
            ));
            let mut response = error(StatusCode::TOO_MANY_REQUESTS, "slow down");
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_str(&value).expect("a header value"),
            );
            Some(response)
        }
        Fault::Reset => {
            shared.say("reset the connection (nothing done)");
            Some(reset(shared, conn, seen, Outcome::Reset))
        }
        Fault::Pass | Fault::Hang | Fault::LoseResponse | Fault::CommitThenReset => {
            // Let tokio run other tasks, as a real service would between accepting and handling.
            tokio::task::yield_now().await;
            None
        }
    }
}

fn status_line(status: StatusCode) -> String {
    format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default()
    )
}

fn ceil_to_second(t: SystemTime) -> SystemTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn error(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(json!({"error": why}))).into_response()
}

/// Never answers: waits until the service stops (or [`HANG_LIMIT`]), then resets the
/// connection. A client that gave up earlier has closed its end already.
async fn hang(shared: &Shared, conn: &Conn, seen: usize, outcome: Outcome) -> Response {
    record(shared, seen, outcome.clone(), None);
    let mut stopping = shared.stopping.subscribe();
    let _ = tokio::time::timeout(HANG_LIMIT, stopping.wait_for(|stop| *stop)).await;
    reset(shared, conn, seen, outcome)
}

/// Resets the request's connection: the response handed back is never written.
fn reset(shared: &Shared, conn: &Conn, seen: usize, outcome: Outcome) -> Response {
    record(shared, seen, outcome, None);
    conn.kill.kill();
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}

// ---------------------------------------------------------------- connections that can be reset

/// A switch that makes a connection fail: its pending and later reads and writes return
/// `ConnectionReset`, and its socket is closed with `SO_LINGER` 0, which sends a TCP RST.
#[derive(Debug, Default)]
pub struct Kill {
    killed: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Kill {
    fn kill(&self) {
        self.killed.store(true, SeqCst);
        let wakers =
            std::mem::take(&mut *self.wakers.lock().unwrap_or_else(PoisonError::into_inner));
        for w in wakers {
            w.wake();
        }
    }

    /// Whether the connection is killed; if not, `cx` is woken when it is.
    fn check(&self, cx: &Context<'_>) -> bool {
        if !self.killed.load(SeqCst) {
            let mut wakers = self.wakers.lock().unwrap_or_else(PoisonError::into_inner);
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        self.killed.load(SeqCst)
    }
}

/// The connection a request came on (axum's `ConnectInfo`), so that a handler can reset it.
#[derive(Debug, Clone)]
pub struct Conn {
    /// The client's address.
    pub peer: SocketAddr,
    kill: Arc<Kill>,
}

impl Connected<IncomingStream<'_, FaultyListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, FaultyListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP listener whose connections can be reset by the handlers.
#[derive(Debug)]
pub struct FaultyListener {
    inner: TcpListener,
    shared: Arc<Shared>,
}

impl Listener for FaultyListener {
    type Io = FaultyStream;
    type Addr = Conn;

    async fn accept(&mut self) -> (FaultyStream, Conn) {
        loop {
            match self.inner.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let kill = Arc::new(Kill::default());
                    let mut conns = self
                        .shared
                        .conns
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    conns.retain(|w| w.strong_count() > 0);
                    conns.push(Arc::downgrade(&kill));
                    drop(conns);
                    let conn = Conn {
                        peer,
                        kill: Arc::clone(&kill),
                    };
                    return (
                        FaultyStream {
                            inner: stream,
                            kill,
                        },
                        conn,
                    );
                }
                // Out of file descriptors and the like: wait a little, as axum does.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Conn> {
        Ok(Conn {
            peer: self.inner.local_addr()?,
            kill: Arc::new(Kill::default()),
        })
    }
}

/// A TCP stream that fails with `ConnectionReset` once its [`Kill`] switch is thrown.
#[derive(Debug)]
pub struct FaultyStream {
    inner: TcpStream,
    kill: Arc<Kill>,
}

impl FaultyStream {
    fn killed(&self, cx: &Context<'_>) -> Option<io::Error> {
        self.kill.check(cx).then(|| {
            // Zero linger: the close that follows sends RST, not FIN.
            let _ = self.inner.set_zero_linger();
            io::ErrorKind::ConnectionReset.into()
        })
    }
}

impl AsyncRead for FaultyStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultyStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------- for the clients

/// The delay a response's `Retry-After` header asks for (delta-seconds or an HTTP-date): the
/// library's own parser (feature `http`, on by default).
#[allow(
    unused_imports,
    reason = "not every program that includes this module reads it"
)]
pub use reattempt::http::retry_after;

/// The HTTP client of the examples and tests: reqwest, talking straight to loopback (no proxy
/// from the environment).
#[allow(
    dead_code,
    reason = "not every program that includes this module makes requests"
)]
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// The innermost cause of an error ("Connection refused (os error 111)"), which says more than
/// reqwest's "error sending request for url (…)".
pub fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// A `tracing` subscriber printing to stdout, filtered by `RUST_LOG` (`RUST_LOG=reattempt=debug`
/// shows each retry), or by `default` when it is unset; times are since the program started.
pub fn init_tracing(default: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .try_init();
}
