//! A fault-injecting HTTP service for the examples and the end-to-end tests: a real axum server
//! on `127.0.0.1`, port 0, started by the program that uses it, whose requests meet the faults a
//! script says — a hang, a response lost after the side effect was applied, a 503, a 429 with
//! `Retry-After`, a reset connection — and which applies each side effect once per
//! `Idempotency-Key`, as the IETF Idempotency-Key draft describes.
//!
//! Used by the HTTP examples (`quickstart`, `payment`, `notify`, `outage`) and, through
//! `payments`, by the end-to-end tests (`tests/http_*.rs`).
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
//!
//! The parts: [`Fault`] and [`RetryAfter`] (what to do to a request), [`Seen`] and [`Outcome`]
//! (what the service saw), the state behind one mutex, the handlers of the three routes, and the
//! connections a handler can reset (TCP RST).

mod conn;
mod fault;
mod handlers;
mod seen;
mod state;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use conn::{Conn, FaultyListener};
pub use fault::{Fault, RetryAfter};
use handlers::{charge, message, price};
pub use seen::{Outcome, Seen};
use state::{Records, Shared};

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

    /// Checks that a call for `subject` was answered by its hedge and charged once: two requests
    /// (the first and one hedge) carrying the same idempotency key, the second answered from the
    /// stored response, one side effect.
    ///
    /// # Panics
    ///
    /// When any of these differs, naming it.
    pub fn assert_hedged_once(&self, subject: &str) {
        assert_eq!(self.effects(subject), 1, "charged exactly once");
        let seen = self.seen_for(subject);
        assert_eq!(seen.len(), 2, "the first request and one hedge: {seen:?}");
        assert!(
            seen[0].key.is_some() && seen[0].key == seen[1].key,
            "both copies carry the call's key: {seen:?}"
        );
        assert_eq!(
            seen[1].outcome,
            Outcome::Replayed,
            "the hedge got the stored answer"
        );
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
