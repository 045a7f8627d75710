//! The running service: started on a local port, scripted, read back, stopped.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::conn::{Conn, FaultyListener};
use super::fault::Fault;
use super::handlers::{charge, message, price};
use super::route::Route;
use super::seen::{Outcome, Seen};
use super::state::{Records, Shared};
use super::streams::{events, object};

/// The running service. Dropping it stops the server and resets its connections.
///
/// ```
/// use reattempt::testing::http::{Fault, Outcome, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.script_for("o-1", [Fault::Unavailable]);
///     let client = reqwest::Client::new();
///     let charge = || {
///         client
///             .post(format!("{}/charges", service.url()))
///             .header("Idempotency-Key", "k-1")
///             .json(&serde_json::json!({"order_id": "o-1", "amount_cents": 1250}))
///             .send()
///     };
///     assert_eq!(charge().await.unwrap().status(), 503);
///     assert_eq!(charge().await.unwrap().status(), 201);
///     let again = charge().await.unwrap(); // the same key: the stored answer, no second charge
///     assert_eq!(again.headers()["idempotent-replayed"], "true");
///     let outcomes: Vec<_> = service.seen_for("o-1").into_iter().map(|s| s.outcome).collect();
///     assert_eq!(outcomes, [Outcome::Status(503), Outcome::Applied, Outcome::Replayed]);
///     assert_eq!(service.effects("o-1"), 1);
/// }
/// ```
#[derive(Debug)]
pub struct Service {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl Service {
    /// Binds `127.0.0.1:0` and serves, on the current tokio runtime, until dropped (or
    /// [stopped](Service::stop)).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert!(service.addr().ip().is_loopback());
    /// }
    /// ```
    ///
    /// # Panics
    /// When no loopback port can be bound, or outside a tokio runtime.
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
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let response = reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap();
    ///     assert_eq!(response.status(), 200);
    /// }
    /// ```
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address (`127.0.0.1` and the port the system gave).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert_eq!(service.url(), format!("http://127.0.0.1:{}", service.addr().port()));
    /// }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Prints a line for each request (`server: …`) on standard output, for a timeline.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     service.narrate(true);
    ///     reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap(); // "server: price of tea: …"
    /// }
    /// ```
    pub fn narrate(&self, on: bool) {
        self.shared.narrate.store(on, SeqCst);
    }

    /// Appends faults to the global script: the next requests (of any subject and route without
    /// a script of their own) meet them in order.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script([Fault::Unavailable, Fault::Status(500)]);
    ///     let price = |sku: &str| reqwest::get(format!("{}/prices/{sku}", service.url()));
    ///     assert_eq!(price("tea").await.unwrap().status(), 503);
    ///     assert_eq!(price("jam").await.unwrap().status(), 500);
    ///     assert_eq!(price("tea").await.unwrap().status(), 200);
    /// }
    /// ```
    pub fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.lock().script.extend(faults);
    }

    /// Appends faults to the script of one subject (an `order_id`, a `to`, a sku), drawn before
    /// any other script.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script_for("tea", [Fault::Unavailable]);
    ///     let price = |sku: &str| reqwest::get(format!("{}/prices/{sku}", service.url()));
    ///     assert_eq!(price("jam").await.unwrap().status(), 200);
    ///     assert_eq!(price("tea").await.unwrap().status(), 503);
    /// }
    /// ```
    pub fn script_for(&self, subject: &str, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .lock()
            .scripts
            .entry(subject.to_owned())
            .or_default()
            .extend(faults);
    }

    /// Appends faults to the script of one route, drawn after the subject's and before the
    /// global script.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Route, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script_route(Route::Messages, [Fault::Status(500)]);
    ///     let price = reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap();
    ///     assert_eq!(price.status(), 200, "another route");
    ///     let message = reqwest::Client::new()
    ///         .post(format!("{}/messages", service.url()))
    ///         .json(&serde_json::json!({"to": "+15550100", "text": "hi"}))
    ///         .send()
    ///         .await
    ///         .unwrap();
    ///     assert_eq!(message.status(), 500);
    ///     assert_eq!(service.effects("+15550100"), 0);
    /// }
    /// ```
    pub fn script_route(&self, route: Route, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .lock()
            .routes
            .entry(route)
            .or_default()
            .extend(faults);
    }

    /// The fault of every request that no script covers ([`Fault::Pass`] at first):
    /// `set_default(Fault::Unavailable)` is a dependency that answers 503 to everything.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.set_default(Fault::Unavailable);
    ///     service.script([Fault::Pass]);
    ///     let price = || reqwest::get(format!("{}/prices/tea", service.url()));
    ///     assert_eq!(price().await.unwrap().status(), 200);
    ///     assert_eq!(price().await.unwrap().status(), 503);
    ///     assert_eq!(price().await.unwrap().status(), 503);
    /// }
    /// ```
    pub fn set_default(&self, fault: Fault) {
        self.shared.lock().default = Some(fault);
    }

    /// Side effects applied for a subject (charges of an order, messages delivered to a number).
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script_for("o-1", [Fault::CommitThenReset]);
    ///     let client = reqwest::Client::new();
    ///     let charge = || {
    ///         client
    ///             .post(format!("{}/charges", service.url()))
    ///             .json(&serde_json::json!({"order_id": "o-1", "amount_cents": 1250}))
    ///             .send()
    ///     };
    ///     assert!(charge().await.is_err(), "charged, then the connection was reset");
    ///     assert_eq!(charge().await.unwrap().status(), 201); // no key: charged again
    ///     assert_eq!(service.effects("o-1"), 2);
    ///     assert_eq!(service.total_effects(), 2);
    /// }
    /// ```
    pub fn effects(&self, subject: &str) -> u32 {
        self.shared
            .lock()
            .effects
            .get(subject)
            .copied()
            .unwrap_or(0)
    }

    /// Side effects applied in all, over every subject.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let client = reqwest::Client::new();
    ///     for to in ["+15550100", "+15550101"] {
    ///         client
    ///             .post(format!("{}/messages", service.url()))
    ///             .json(&serde_json::json!({"to": to, "text": "hi"}))
    ///             .send()
    ///             .await
    ///             .unwrap();
    ///     }
    ///     assert_eq!(service.total_effects(), 2);
    /// }
    /// ```
    pub fn total_effects(&self) -> u32 {
        self.shared.lock().effects.values().sum()
    }

    /// Every request received, in order of arrival.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Outcome, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script([Fault::Reset]);
    ///     let price = || reqwest::get(format!("{}/prices/tea", service.url()));
    ///     assert!(price().await.is_err());
    ///     assert!(price().await.is_ok());
    ///     let seen = service.seen();
    ///     assert_eq!((seen[0].fault, &seen[0].outcome), (Fault::Reset, &Outcome::Reset));
    ///     assert_eq!((seen[1].fault, &seen[1].outcome), (Fault::Pass, &Outcome::Read));
    /// }
    /// ```
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().seen.clone()
    }

    /// The requests received for one subject, in order of arrival.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     for sku in ["tea", "jam", "tea"] {
    ///         reqwest::get(format!("{}/prices/{sku}", service.url())).await.unwrap();
    ///     }
    ///     assert_eq!(service.seen_for("tea").len(), 2);
    /// }
    /// ```
    pub fn seen_for(&self, subject: &str) -> Vec<Seen> {
        self.shared
            .lock()
            .seen
            .iter()
            .filter(|s| s.subject.as_deref() == Some(subject))
            .cloned()
            .collect()
    }

    /// The requests that carried this `Idempotency-Key`, in order of arrival: the attempts of
    /// one call, when the client sends the call's key on each.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Outcome, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script([Fault::Status(500)]);
    ///     let client = reqwest::Client::new();
    ///     for key in ["k-1", "k-1", "k-2"] {
    ///         client
    ///             .post(format!("{}/charges", service.url()))
    ///             .header("Idempotency-Key", key)
    ///             .json(&serde_json::json!({"order_id": key, "amount_cents": 100}))
    ///             .send()
    ///             .await
    ///             .unwrap();
    ///     }
    ///     let k1: Vec<_> = service.seen_with_key("k-1").into_iter().map(|s| s.outcome).collect();
    ///     assert_eq!(k1, [Outcome::Status(500), Outcome::Applied]);
    ///     assert_eq!(service.seen_with_key("k-2").len(), 1);
    /// }
    /// ```
    pub fn seen_with_key(&self, key: &str) -> Vec<Seen> {
        self.shared
            .lock()
            .seen
            .iter()
            .filter(|s| s.key.as_deref() == Some(key))
            .cloned()
            .collect()
    }

    /// Checks that a call for `subject` was answered by its hedge and charged once: two requests
    /// (the first and one hedge) carrying the same idempotency key, the second answered from the
    /// stored response, one side effect.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::testing::http::{Fault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.script_for("o-1", [Fault::SlowAnswer(Duration::from_secs(5))]);
    ///     let client = reqwest::Client::new();
    ///     let charge = || {
    ///         client
    ///             .post(format!("{}/charges", service.url()))
    ///             .header("Idempotency-Key", "k-1")
    ///             .json(&serde_json::json!({"order_id": "o-1", "amount_cents": 1250}))
    ///             .send()
    ///     };
    ///     let first = charge(); // commits, then stalls
    ///     let hedge = async {
    ///         tokio::time::sleep(Duration::from_millis(50)).await;
    ///         charge().await
    ///     };
    ///     tokio::select! {
    ///         _ = first => unreachable!("the first copy stalls for 5 s"),
    ///         answer = hedge => assert_eq!(answer.unwrap().status(), 201),
    ///     }
    ///     service.assert_hedged_once("o-1");
    /// }
    /// ```
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
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap();
    ///     assert_eq!(service.request_count(), 1);
    /// }
    /// ```
    pub fn request_count(&self) -> usize {
        self.shared.lock().seen.len()
    }

    /// Takes the service fully down: stops accepting (the port refuses connections) and resets
    /// every open connection. Its state (store, counts, scripts) is kept for [`restart`].
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let mut service = reattempt::testing::http::Service::start().await;
    ///     let url = format!("{}/prices/tea", service.url());
    ///     service.stop().await;
    ///     assert!(reqwest::get(&url).await.unwrap_err().is_connect());
    ///     service.restart().await;
    ///     assert_eq!(reqwest::get(&url).await.unwrap().status(), 200);
    /// }
    /// ```
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

    /// Brings a [stopped](Service::stop) service back on the same port, with its state.
    ///
    /// ```
    /// use reattempt::testing::http::{Fault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let mut service = Service::start().await;
    ///     service.script([Fault::Status(500)]);
    ///     service.stop().await;
    ///     service.restart().await; // the script is still there
    ///     let price = reqwest::get(format!("{}/prices/tea", service.url())).await.unwrap();
    ///     assert_eq!(price.status(), 500);
    /// }
    /// ```
    ///
    /// # Panics
    /// When the service is running, or its port cannot be bound again within a second.
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

impl Service {
    /// The service's state (for the scripting of objects and events, in their own files).
    pub(super) fn records(&self) -> MutexGuard<'_, Records> {
        self.shared.lock()
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
        .route("/objects/{name}", get(object))
        .route("/events", get(events))
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
