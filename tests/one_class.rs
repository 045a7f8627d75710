//! One vocabulary, one behaviour (issue 37): `Transient::class` is honoured by every driver with
//! nothing extra written. One scenario (a throttling failure, then a transient one, then success)
//! runs under `Preset::Aws2026`'s policy and budget, on tokio's paused clock, through the
//! attribute, the closure API with `.retry_if(reattempt::transient)` alone, the tower layer with
//! `.retry_if(transient)`, and, over HTTP on loopback (a 429, then a 503, then a 200 from an axum
//! server), the tower layer's `.http()`, the reqwest middleware and the closure API over reqwest.
//! Each must sleep the same delays (throttling grows from 1 s, transient from 50 ms) and leave the
//! same tokens in the budget (throttling costs 5, transient 14). The gRPC layer's row is in
//! `e2e/tests/one_class_grpc.rs`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::testing::trace;
use reattempt::tower::RetryLayer;
use reattempt::{ErrorClass, Jitter, Preset, RetryBudget, RetryPolicy, Transient, retryable};
use tower::{BoxError, Layer, ServiceBuilder, ServiceExt, service_fn};

const MS: Duration = Duration::from_millis(1);

/// The preset's schedule without its jitter, so that every driver's delays compare exactly.
fn policy() -> RetryPolicy {
    Preset::Aws2026
        .policy()
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

static POLICY: LazyLock<RetryPolicy> = LazyLock::new(policy);

fn budget() -> RetryBudget {
    Preset::Aws2026.budget().build().unwrap()
}

/// What a driver did with the scenario.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    succeeded: bool,
    delays: Vec<Duration>,
    classes: Vec<String>,
    tokens: u32,
}

/// What every driver must do: the throttling retry waits the preset's throttling delay (1 s) and
/// costs 5 tokens; the transient one waits 50 ms × 2 (its second retry) and costs 14, which the
/// success gives back (the AWS quota refunds the last retry's cost).
fn expected() -> Run {
    Run {
        succeeded: true,
        delays: vec![Duration::from_secs(1), 100 * MS],
        classes: vec!["throttling".into(), "transient".into()],
        tokens: 500 - 5 - 14 + 14,
    }
}

fn run(succeeded: bool, trace: &reattempt::testing::Trace, budget: &RetryBudget) -> Run {
    Run {
        succeeded,
        delays: trace.delays(),
        classes: trace.retries().into_iter().map(|r| r.class).collect(),
        tokens: budget.available(),
    }
}

// ---------------------------------------------------------------------------------------------
// A user's error type: the words a user writes once, in its `Transient` impl.

#[derive(Debug)]
enum ApiError {
    SlowDown,
    Unavailable,
    /// The policy's `timeout` cut the attempt (the preset sets none: never made here).
    TimedOut,
}

impl From<reattempt::Elapsed> for ApiError {
    fn from(_: reattempt::Elapsed) -> Self {
        ApiError::TimedOut
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for ApiError {}

impl Transient for ApiError {
    fn is_transient(&self) -> bool {
        true
    }
    fn class(&self) -> ErrorClass {
        match self {
            ApiError::SlowDown => ErrorClass::Throttling,
            ApiError::Unavailable => ErrorClass::Transient,
            ApiError::TimedOut => ErrorClass::Timeout,
        }
    }
}

/// The scenario, one attempt per call: throttled, unavailable, then an answer.
fn attempt(calls: &AtomicU32) -> Result<u32, ApiError> {
    match calls.fetch_add(1, SeqCst) {
        0 => Err(ApiError::SlowDown),
        1 => Err(ApiError::Unavailable),
        n => Ok(n),
    }
}

struct Api {
    calls: AtomicU32,
    budget: RetryBudget,
}

impl Api {
    fn new() -> Self {
        Api {
            calls: AtomicU32::new(0),
            budget: budget(),
        }
    }

    #[retryable(policy = &POLICY, budget = self.budget, retry_if = reattempt::transient)]
    async fn call(&self) -> Result<u32, ApiError> {
        attempt(&self.calls)
    }
}

async fn attribute() -> Run {
    let api = Api::new();
    let (out, trace) = trace(api.call()).await;
    run(out.is_ok(), &trace, &api.budget)
}

async fn closure_api() -> Run {
    let (calls, budget) = (AtomicU32::new(0), budget());
    let policy = policy();
    let call = policy
        .retry(|| async { attempt(&calls) })
        .retry_if(reattempt::transient)
        .without_timeout()
        .budget(&budget);
    let (out, trace) = trace(call).await;
    run(out.is_ok(), &trace, &budget)
}

async fn tower_layer() -> Run {
    let calls = Arc::new(AtomicU32::new(0));
    let budget = Arc::new(budget());
    let service = service_fn(move |(): ()| {
        let calls = Arc::clone(&calls);
        async move { attempt(&calls) }
    });
    let client = RetryLayer::new(policy())
        .retry_if(reattempt::transient::<ApiError>)
        .without_timeout()
        .budget(Arc::clone(&budget))
        .layer(service);
    let (out, trace) = trace(client.oneshot(())).await;
    run(out.is_ok(), &trace, &budget)
}

// ---------------------------------------------------------------------------------------------
// Over HTTP: a 429, then a 503, then a 200, from an axum server on loopback.

async fn server() -> SocketAddr {
    let calls = Arc::new(AtomicU32::new(0));
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let calls = Arc::clone(&calls);
            async move {
                match calls.fetch_add(1, SeqCst) {
                    0 => StatusCode::TOO_MANY_REQUESTS,
                    1 => StatusCode::SERVICE_UNAVAILABLE,
                    _ => StatusCode::OK,
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn tower_http() -> Run {
    let (addr, budget) = (server().await, Arc::new(budget()));
    let client = ServiceBuilder::new()
        .layer(
            RetryLayer::new(policy())
                .http()
                .without_timeout()
                .budget(Arc::clone(&budget)),
        )
        .map_err(BoxError::from)
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let request = Request::get(format!("http://{addr}/"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let (out, trace) = trace(client.oneshot(request)).await;
    run(out.unwrap().status() == StatusCode::OK, &trace, &budget)
}

/// The HTTP layer with a `retry_if_ok` of the user's, which says nothing of the class: a 429
/// response is throttling all the same.
async fn tower_http_own_rule() -> Run {
    let (addr, budget) = (server().await, Arc::new(budget()));
    let client = ServiceBuilder::new()
        .layer(
            RetryLayer::new(policy())
                .http()
                .retry_if_ok(|r: &http::Response<hyper::body::Incoming>| {
                    matches!(r.status().as_u16(), 429 | 503)
                })
                .without_timeout()
                .budget(Arc::clone(&budget)),
        )
        .map_err(BoxError::from)
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let request = Request::get(format!("http://{addr}/"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let (out, trace) = trace(client.oneshot(request)).await;
    run(out.unwrap().status() == StatusCode::OK, &trace, &budget)
}

/// The middleware's hooks replaced by the user's, stating no class.
#[derive(Clone)]
struct OwnRule;

impl reattempt::Hooks<reqwest::Response, reqwest_middleware::Error> for OwnRule {
    fn retry_if_ok(&mut self, response: &reqwest::Response) -> bool {
        matches!(response.status().as_u16(), 429 | 503)
    }
}

async fn reqwest_middleware_own_rule() -> Run {
    let (addr, budget) = (server().await, Arc::new(budget()));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(policy())
                .hooks(OwnRule)
                .budget(Arc::clone(&budget)),
        )
        .build();
    let (out, trace) = trace(client.get(format!("http://{addr}/")).send()).await;
    run(out.unwrap().status() == StatusCode::OK, &trace, &budget)
}

async fn reqwest_middleware() -> Run {
    let (addr, budget) = (server().await, Arc::new(budget()));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()).budget(Arc::clone(&budget)))
        .build();
    let (out, trace) = trace(client.get(format!("http://{addr}/")).send()).await;
    run(out.unwrap().status() == StatusCode::OK, &trace, &budget)
}

/// The closure API over reqwest: a status error's class is `reqwest::Error`'s own.
async fn closure_api_over_reqwest() -> Run {
    let (addr, budget) = (server().await, budget());
    let (client, policy) = (reqwest::Client::new(), policy());
    let call = policy
        .retry(|| async {
            client
                .get(format!("http://{addr}/"))
                .send()
                .await?
                .error_for_status()
        })
        .retry_if(reattempt::transient)
        // A GET: safe to repeat after a 503, whose outcome is unknown.
        .idempotent(true)
        .without_timeout()
        .budget(&budget);
    let (out, trace) = trace(call).await;
    run(out.is_ok(), &trace, &budget)
}

/// The closure API retrying responses, asking the status itself: `StatusCode`'s `is_transient`
/// notes its class as `transient` does.
async fn closure_api_over_reqwest_responses() -> Run {
    let (addr, budget) = (server().await, budget());
    let (client, policy) = (reqwest::Client::new(), policy());
    let call = policy
        .retry(|| client.get(format!("http://{addr}/")).send())
        .retry_if_ok(|r| r.status().is_transient())
        .idempotent(true)
        .without_timeout()
        .budget(&budget);
    let (out, trace) = trace(call).await;
    run(out.unwrap().status() == StatusCode::OK, &trace, &budget)
}

#[tokio::test(start_paused = true)]
async fn every_driver_honours_the_class_of_the_same_failures() {
    let expected = expected();
    let mut differ = Vec::new();
    for (driver, got) in [
        ("#[retryable]", attribute().await),
        ("closure API, .retry_if(transient)", closure_api().await),
        (
            "tower RetryLayer, .retry_if(transient)",
            tower_layer().await,
        ),
        ("tower RetryLayer, .http()", tower_http().await),
        (
            "tower RetryLayer, .http().retry_if_ok(a rule of the user's)",
            tower_http_own_rule().await,
        ),
        ("reqwest middleware", reqwest_middleware().await),
        (
            "reqwest middleware, .hooks(a rule of the user's)",
            reqwest_middleware_own_rule().await,
        ),
        (
            "closure API over reqwest, .retry_if(transient)",
            closure_api_over_reqwest().await,
        ),
        (
            "closure API over reqwest, .retry_if_ok(|r| r.status().is_transient())",
            closure_api_over_reqwest_responses().await,
        ),
    ] {
        if got != expected {
            differ.push(format!("{driver}: {got:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "expected {expected:?} from every driver; these differ:\n{}",
        differ.join("\n")
    );
}

/// With no `retry_if`, a driver knows nothing of the error's type (the closure API and the tower
/// layer put no bound on it): every retry is transient, unless `.error_class(..)` says more.
#[tokio::test(start_paused = true)]
async fn without_retry_if_nothing_is_known_of_the_class_unless_error_class_says_it() {
    let (calls, budget) = (AtomicU32::new(0), budget());
    let policy = policy();
    let call = policy
        .retry(|| async { attempt(&calls) })
        .without_timeout()
        .budget(&budget);
    let (out, seen) = trace(call).await;
    assert!(out.is_ok());
    assert_eq!(seen.delays(), [50 * MS, 100 * MS], "both retries transient");

    let (calls, budget) = (
        AtomicU32::new(0),
        reattempt::Preset::Aws2026.budget().build().unwrap(),
    );
    let call = policy
        .retry(|| async { attempt(&calls) })
        .error_class(reattempt::error_class)
        .without_timeout()
        .budget(&budget);
    let (out, trace) = trace(call).await;
    assert_eq!(
        (out.is_ok(), run(true, &trace, &budget)),
        (true, expected())
    );
}

/// An explicit class wins over the one `transient` notes.
#[tokio::test(start_paused = true)]
async fn an_explicit_error_class_wins() {
    let (calls, budget) = (AtomicU32::new(0), budget());
    let policy = policy();
    let call = policy
        .retry(|| async { attempt(&calls) })
        .retry_if(reattempt::transient)
        .error_class(|_| ErrorClass::Transient)
        .without_timeout()
        .budget(&budget);
    let (out, trace) = trace(call).await;
    assert!(out.is_ok());
    assert_eq!(
        trace.delays(),
        [50 * MS, 100 * MS],
        "the user said transient"
    );
    assert_eq!(budget.available(), 500 - 14);
}

/// An error type that does not implement `Transient`, wrapping one that does.
#[derive(Debug)]
struct Opaque(ApiError);

impl From<reattempt::Elapsed> for Opaque {
    fn from(elapsed: reattempt::Elapsed) -> Self {
        Opaque(elapsed.into())
    }
}

impl Api {
    #[retryable(policy = &POLICY, budget = self.budget, retry_if = |e: &Opaque| reattempt::transient(&e.0))]
    async fn opaque(&self) -> Result<u32, Opaque> {
        attempt(&self.calls).map_err(Opaque)
    }
}

/// `Opaque` states no class (it does not implement `Transient`), and a class noted for the cause
/// it wraps is not its own: transient, in the attribute and in the closure API alike. (It used to
/// be the cause's class here, but the same rule then gave a wrapper that does implement
/// `Transient` its cause's class in the closure API and its own in the attribute: see
/// `tests/one_class_edges.rs`.)
#[tokio::test(start_paused = true)]
async fn a_class_noted_for_a_wrapped_cause_is_not_the_wrappers_in_any_driver() {
    let api = Api::new();
    let (out, seen) = trace(api.opaque()).await;
    let attribute = run(out.is_ok(), &seen, &api.budget);

    let (calls, budget) = (AtomicU32::new(0), budget());
    let policy = policy();
    let call = policy
        .retry(|| async { attempt(&calls).map_err(Opaque) })
        .retry_if(|e: &Opaque| reattempt::transient(&e.0))
        .without_timeout()
        .budget(&budget);
    let (out, seen) = trace(call).await;
    let closure = run(out.is_ok(), &seen, &budget);

    assert_eq!(attribute, closure);
    assert_eq!(
        (attribute.delays, attribute.classes),
        (
            vec![50 * MS, 100 * MS],
            vec!["transient".into(), "transient".into()]
        ),
        "both retries transient: nothing is known of Opaque's own class"
    );
}
