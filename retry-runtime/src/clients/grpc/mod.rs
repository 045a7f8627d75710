//! gRPC retries and hedging for tonic clients, as gRFC A6 specifies them: a tower layer over a
//! tonic `Channel` (or any `Service<http::Request<tonic::body::Body>>`).
//!
//! The layer is the tower [`RetryLayer`](crate::tower::RetryLayer) (the same engine, events,
//! `context()` and conformance suite as the other drivers) with gRPC's rules in its slots:
//! - `attempt`: one attempt below the retry layer (the time left as `grpc-timeout`, the
//!   transparent retry of a refused stream, a Trailers-Only response read as its `Status`);
//! - `hooks`: which statuses are retried, the server's pushback, A6's backoff, the throttle,
//!   the copies of the request with `grpc-previous-rpc-attempts`, and the replay cap's commit.

mod attempt;
mod hooks;
pub(crate) mod stream;

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use tokio::time::Instant;
use tonic::Status;
use tonic::body::Body;
use tower_layer::Layer;
use tower_service::Service;

use self::attempt::{Attempts, BoxError, CallDeadline, Unsent, grpc_timeout};
pub use self::hooks::TransientStatuses;
use self::hooks::{BoxedHooks, GrpcHooks, GrpcReplay, Mode};
// A6's pushback, as `Transient for Status` reads it too.
pub(crate) use self::hooks::{PUSHBACK, Pushback, pushback};
use crate::classify::tonic::{
    Codes, GrpcRetryPolicy, HedgingPolicy, MethodConfig, RetryThrottle, ServiceConfig,
};
use crate::clients::replay_body::{DEFAULT_REPLAY_CAP, ReplayBody};
use crate::clients::tower::{RetryLayer, Shared as Guard};
use crate::engine::hooks::Hooks;
use crate::{
    AdaptiveThrottle, Bulkhead, CircuitBreaker, HedgeAfter, Jitter, PolicySettings, RetryBudget,
    RetryPolicy,
};

// A6's default cap on `maxAttempts`, the one the service config's policies start from.
pub use crate::config::grpc::DEFAULT_MAX_ATTEMPTS_CAP;

/// The longest pushback a server can ask for (`i32::MAX` ms, about 24.8 days): the engine's
/// `max_delay` under the layer, so that a pushback is waited exactly.
const LONGEST_PUSHBACK: Duration = Duration::from_millis(i32::MAX as u64);

/// A tower layer that retries and hedges gRPC calls as gRFC A6 specifies, for a tonic
/// `Channel` (feature `tonic`).
///
/// - **What is retried:** a status in the policy's `retryableStatusCodes`, from a Trailers-Only
///   response or a transport failure before the response headers (read as `UNAVAILABLE`). A
///   response with headers commits the call: it is returned, streamed, and never retried
///   (a server-streaming call is retried until its server sends headers, which a tonic server
///   does with its first message or its error).
/// - **Backoff:** `min(initialBackoff × multiplier^(n−1), maxBackoff) × random(0.8, 1.2)`, `n`
///   counted since the last pushback. A server's `grpc-retry-pushback-ms` is the next delay
///   exactly (then `n` starts again); a negative or malformed one, or two values, ends the call
///   with its status and, whatever the status, counts as a failure for the throttle (A6,
///   grpc-go).
/// - **Attempts:** `maxAttempts`, capped at [`DEFAULT_MAX_ATTEMPTS_CAP`] unless raised; each
///   retry and hedge carries `grpc-previous-rpc-attempts`, and so does the final response.
/// - **Hedging** (a `hedgingPolicy`): copies `hedgingDelay` apart, the first response that is
///   not a non-fatal status wins, the others are cancelled; a non-fatal status sends the next
///   copy at once.
/// - **Deadline:** the call's `grpc-timeout` (tonic's `Request::set_timeout`) or the method's
///   `timeout`, the shorter, spans every attempt and sleep; each attempt tells the server the
///   time left; past it the call ends with `DEADLINE_EXCEEDED`.
/// - **Request bodies** are recorded up to [`replay_cap`](Self::replay_cap) (64 KiB by default)
///   and replayed to each attempt; a larger request is sent once (committed), never buffered
///   beyond the cap. A hedge waits to be sent until the body's first read has settled, and is
///   not sent at all once another copy holds the body past the cap (no stream is opened, so
///   none is reset). A copy left behind by the cap never ends the call, whatever the
///   [`hooks`](GrpcRetryLayer::hooks): it is the layer's own doing, never shown to them, never
///   a failure for the throttle or the guards, and the call ends with the server's answer to
///   the copy holding the body. A hedge left behind unsent is not counted in
///   `grpc-previous-rpc-attempts` (A6 counts the attempts sent), but it did start: it counts
///   towards `maxAttempts`, and a [`budget`](Self::budget) paid for it as for any hedge.
/// - **Transparent retry:** a stream the server refused before its application saw it
///   (`REFUSED_STREAM`) is sent again once, at once, with or without a policy, counted neither
///   as an attempt nor by the throttle.
/// - **Throttle:** the service config's `retryThrottling` ([`RetryThrottle`]), shared by every
///   method of the layer's channel.
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     use reattempt::tonic::{GrpcRetryLayer, ServiceConfig};
///     use tonic::transport::Endpoint;
///     use tower::Layer;
///
///     let config = ServiceConfig::from_json(r#"{
///       "methodConfig": [{
///         "name": [{ "service": "grpc.health.v1.Health" }],
///         "retryPolicy": {
///           "maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
///           "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]
///         }
///       }],
///       "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
///     }"#)?;
///     let channel = Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
///     let channel = GrpcRetryLayer::from_service_config(config).layer(channel);
///     // let mut client = HealthClient::new(channel);
/// # let _ = channel;
///     Ok(())
/// }
/// ```
///
/// A layer made with [`from_policy`](GrpcRetryLayer::from_policy) runs reattempt's own
/// [`RetryPolicy`] instead (its schedule, per-attempt `timeout`, `max_elapsed`, `hedge_after`),
/// with a classification of your choosing ([`hooks`](GrpcRetryLayer::hooks)); the commit rules,
/// the deadline, the replayed bodies and the transparent retry are the same. Either kind takes
/// the runtime's guards: [`circuit_breaker`](GrpcRetryLayer::circuit_breaker),
/// [`budget`](GrpcRetryLayer::budget), [`adaptive_throttle`](GrpcRetryLayer::adaptive_throttle),
/// [`bulkhead`](GrpcRetryLayer::bulkhead).
#[derive(Debug)]
pub struct GrpcRetryLayer<K = GrpcPolicies> {
    shared: Arc<Shared>,
    kind: PhantomData<K>,
}

impl<K> Clone for GrpcRetryLayer<K> {
    fn clone(&self) -> Self {
        GrpcRetryLayer {
            shared: Arc::clone(&self.shared),
            kind: PhantomData,
        }
    }
}

/// The kind of a [`GrpcRetryLayer`] that follows gRPC's policies (a service config,
/// [`GrpcRetryPolicy`], [`HedgingPolicy`]): it has A6's throttle and attempt cap.
#[derive(Clone, Copy, Debug)]
pub struct GrpcPolicies;

/// The kind of a [`GrpcRetryLayer`] made with
/// [`from_policy`](GrpcRetryLayer::from_policy): reattempt's [`RetryPolicy`] and
/// [`hooks`](GrpcRetryLayer::hooks) of your choosing.
#[derive(Clone, Copy, Debug)]
pub struct EnginePolicy;

/// What every service of one layer shares: the policies, the throttle, the per-method engines.
#[derive(Debug)]
struct Shared {
    config: Source,
    throttle: Option<RetryThrottle>,
    replay_cap: usize,
    /// The layer's cap on `maxAttempts`, in place of each policy's (A6's 5 by default).
    max_attempts_cap: Option<u32>,
    name: &'static str,
    breaker: Option<Guard<Arc<CircuitBreaker>>>,
    budget: Option<Guard<Arc<RetryBudget>>>,
    adaptive: Option<Guard<Arc<AdaptiveThrottle>>>,
    bulkhead: Option<Guard<Arc<Bulkhead>>>,
    /// The tower layer of each method path seen, built on first use.
    methods: RwLock<HashMap<Box<str>, Arc<MethodLayer>>>,
}

/// Where a method's policy comes from.
#[derive(Debug)]
enum Source {
    /// One retry policy for every method.
    Retry(GrpcRetryPolicy),
    /// One hedging policy for every method.
    Hedge(HedgingPolicy),
    /// A service config, matched by the request's path.
    Config(Box<ServiceConfig>),
    /// Reattempt's own policy and a classification, for every method.
    Engine(Box<RetryPolicy>, BoxedHooks),
}

/// The retry layer of one method config, with the method's timeout.
type EngineLayer = EngineLayerOf<crate::ElapsedInto>;
type EngineLayerOf<C> = RetryLayer<
    BoxedHooks,
    C,
    GrpcReplay,
    Option<Guard<Arc<CircuitBreaker>>>,
    Option<Guard<Arc<RetryBudget>>>,
    Option<Guard<Arc<AdaptiveThrottle>>>,
    Option<Guard<Arc<Bulkhead>>>,
>;

#[derive(Debug)]
struct MethodLayer {
    layer: EngineLayer,
    timeout: Option<Duration>,
}

impl GrpcRetryLayer {
    /// Retries every method under reattempt's own `policy`: its schedule, jitter, per-attempt
    /// `timeout`, `max_elapsed` and `hedge_after`, for the statuses [`TransientStatuses`] says
    /// (or your [`hooks`](GrpcRetryLayer::hooks)), with gRPC's commit rules, deadline, replayed
    /// bodies, transparent retry and `grpc-previous-rpc-attempts`. A server's pushback is the
    /// next delay, within the policy's `max_delay`.
    ///
    /// [`TransientStatuses`] is the crate's judgement: a status that may come after the server
    /// acted (`UNAVAILABLE`, a deadline, a reset mid-call) is retried, and a call hedged, only
    /// when the policy says its calls are safe to repeat
    /// ([`idempotent`](crate::RetryPolicyBuilder::idempotent)); a connection never made is
    /// retried on any call. (A service config's policy, [`from_service_config`], retries the codes
    /// it lists, as gRFC A6 says.)
    ///
    /// [`from_service_config`]: GrpcRetryLayer::from_service_config
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::RetryPolicy;
    /// use reattempt::tonic::GrpcRetryLayer;
    ///
    /// let policy = RetryPolicy::builder()
    ///     .max_attempts(4)
    ///     .delay(Duration::from_millis(50))
    ///     .timeout(Duration::from_millis(300))
    ///     .idempotent(true) // reads: safe to repeat after an UNAVAILABLE or a timeout
    ///     .build()?;
    /// let layer = GrpcRetryLayer::from_policy(policy);
    /// # let _ = layer;
    /// # Ok::<(), reattempt::PolicyError>(())
    /// ```
    pub fn from_policy(policy: RetryPolicy) -> GrpcRetryLayer<EnginePolicy> {
        GrpcRetryLayer::with_source(Source::Engine(
            Box::new(policy),
            BoxedHooks::new(TransientStatuses),
        ))
    }

    /// Retries every method under `policy` (a `retryPolicy` built in code).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(
    ///     4, Duration::from_millis(100), Duration::from_secs(1), 2.0, &[Code::Unavailable],
    /// )?;
    /// let layer = GrpcRetryLayer::new(policy);
    /// # let _ = layer;
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn new(policy: GrpcRetryPolicy) -> Self {
        Self::with_source(Source::Retry(policy))
    }

    /// Hedges every method under `policy` (a `hedgingPolicy` built in code).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryLayer, HedgingPolicy};
    /// use tonic::Code;
    ///
    /// let policy = HedgingPolicy::new(3, Duration::from_millis(50), &[Code::Unavailable])?;
    /// let layer = GrpcRetryLayer::hedging(policy);
    /// # let _ = layer;
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn hedging(policy: HedgingPolicy) -> Self {
        Self::with_source(Source::Hedge(policy))
    }

    /// Retries, hedges and throttles each method as `config` says (its `methodConfig`, matched
    /// by the request's path, and its `retryThrottling`). A method it does not name is sent
    /// once (with the transparent retry of a refused stream).
    ///
    /// ```
    /// use reattempt::tonic::{GrpcRetryLayer, ServiceConfig};
    ///
    /// let config = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{}],
    ///   "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
    ///   "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#)?;
    /// let layer = GrpcRetryLayer::from_service_config(config);
    /// # let _ = layer;
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    pub fn from_service_config(config: ServiceConfig) -> Self {
        let throttle = config.retry_throttling();
        Self::with_source(Source::Config(Box::new(config))).set_throttle(throttle)
    }

    /// The layer's throttle (A6's `retryThrottling`): see
    /// [`throttle`](GrpcRetryLayer::throttle).
    fn set_throttle(mut self, throttle: Option<RetryThrottle>) -> Self {
        self.shared_mut().throttle = throttle;
        self
    }
}

impl GrpcRetryLayer<EnginePolicy> {
    /// Classifies each attempt's outcome with `hooks` in place of [`TransientStatuses`]:
    /// `retry_if` (a `Status`), `retry_if_ok` (a response, which has headers: retrying one
    /// re-sends a call whose server answered), `retry_after`, `delay_for`, `on_retry` and the
    /// rest of [`Hooks`](crate::Hooks), over `http::Response<tonic::body::Body>` and `Status`.
    /// Hooks that state no `class` still get the `Status`'s own
    /// ([`Transient::class`](crate::Transient::class): `RESOURCE_EXHAUSTED` is throttling).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{Hooks, RetryPolicy};
    /// use reattempt::tonic::GrpcRetryLayer;
    /// use tonic::{Code, Status};
    ///
    /// /// Retries ABORTED (a conflict the server asks to retry) and nothing else.
    /// #[derive(Clone)]
    /// struct Aborted;
    /// impl Hooks<http::Response<tonic::body::Body>, Status> for Aborted {
    ///     fn retry_if(&mut self, status: &Status) -> bool {
    ///         status.code() == Code::Aborted
    ///     }
    /// }
    /// let layer = GrpcRetryLayer::from_policy(RetryPolicy::builder().build()?).hooks(Aborted);
    /// # let _ = layer;
    /// # Ok::<(), reattempt::PolicyError>(())
    /// ```
    #[must_use]
    pub fn hooks<H>(mut self, hooks: H) -> Self
    where
        H: Hooks<Response<Body>, Status> + Clone + Send + Sync + 'static,
    {
        if let Source::Engine(_, slot) = &mut self.shared_mut().config {
            *slot = BoxedHooks::new(hooks);
        }
        self
    }
}

impl<K> GrpcRetryLayer<K> {
    fn with_source(config: Source) -> Self {
        GrpcRetryLayer {
            shared: Arc::new(Shared {
                config,
                throttle: None,
                replay_cap: DEFAULT_REPLAY_CAP,
                max_attempts_cap: None,
                name: "grpc",
                breaker: None,
                budget: None,
                adaptive: None,
                bulkhead: None,
                methods: RwLock::new(HashMap::new()),
            }),
            kind: PhantomData,
        }
    }

    /// Passes every attempt through `breaker`: while it is open, a call ends at once with
    /// `UNAVAILABLE` (the conversion `reattempt::tonic` gives a rejection), never retried.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use reattempt::CircuitBreaker;
    /// use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let breaker = Arc::new(CircuitBreaker::builder().build()?);
    /// let policy = GrpcRetryPolicy::new(3, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// let layer = GrpcRetryLayer::new(policy).circuit_breaker(breaker);
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn circuit_breaker(mut self, breaker: Arc<CircuitBreaker>) -> Self {
        self.shared_mut().breaker = Some(Guard(breaker));
        self
    }

    /// Pays each retry from `budget`, and each success back into it: when it cannot pay, the
    /// call ends with its last outcome.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{RetryBudget, RetryPolicy};
    /// use reattempt::tonic::GrpcRetryLayer;
    ///
    /// let budget = Arc::new(RetryBudget::builder().build()?);
    /// let layer = GrpcRetryLayer::from_policy(RetryPolicy::builder().build()?).budget(budget);
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.shared_mut().budget = Some(Guard(budget));
        self
    }

    /// Asks `throttle` (the SRE client-side throttle, [`AdaptiveThrottle`]) before every
    /// attempt: an attempt it sheds ends the call with `UNAVAILABLE`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{AdaptiveThrottle, RetryPolicy};
    /// use reattempt::tonic::GrpcRetryLayer;
    ///
    /// let throttle = Arc::new(AdaptiveThrottle::builder().build()?);
    /// let layer = GrpcRetryLayer::from_policy(RetryPolicy::builder().build()?).adaptive_throttle(throttle);
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn adaptive_throttle(mut self, throttle: Arc<AdaptiveThrottle>) -> Self {
        self.shared_mut().adaptive = Some(Guard(throttle));
        self
    }

    /// Holds a slot of `bulkhead` for each call, from before its first attempt to the end of
    /// its last: a call it turns away ends with `UNAVAILABLE`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use reattempt::{Bulkhead, RetryPolicy};
    /// use reattempt::tonic::GrpcRetryLayer;
    ///
    /// let bulkhead = Arc::new(Bulkhead::builder().max_concurrent(16).build()?);
    /// let layer = GrpcRetryLayer::from_policy(RetryPolicy::builder().build()?).bulkhead(bulkhead);
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn bulkhead(mut self, bulkhead: Arc<Bulkhead>) -> Self {
        self.shared_mut().bulkhead = Some(Guard(bulkhead));
        self
    }

    /// The codes the layer retries for the method at `path`: its retry policy's
    /// `retryableStatusCodes`, or its hedging policy's `nonFatalStatusCodes`; `None` when the
    /// layer has no gRPC policy for it (a method its service config does not name, or a layer
    /// made [`from_policy`](GrpcRetryLayer::from_policy), whose classification is the crate's).
    pub(crate) fn method_codes(&self, path: &str) -> Option<Codes> {
        match &self.shared.config {
            Source::Retry(policy) => Some(policy.retryable_status_codes()),
            Source::Hedge(policy) => Some(policy.non_fatal_status_codes()),
            Source::Config(config) => config.method_config(path).and_then(|method| {
                method
                    .retry_policy()
                    .map(GrpcRetryPolicy::retryable_status_codes)
                    .or_else(|| {
                        method
                            .hedging_policy()
                            .map(HedgingPolicy::non_fatal_status_codes)
                    })
            }),
            Source::Engine(..) => None,
        }
    }

    /// The settings, before the layer is shared (each setting makes a fresh layer).
    fn shared_mut(&mut self) -> &mut Shared {
        if Arc::get_mut(&mut self.shared).is_none() {
            let s = &*self.shared;
            self.shared = Arc::new(Shared {
                config: match &s.config {
                    Source::Retry(p) => Source::Retry(p.clone()),
                    Source::Hedge(p) => Source::Hedge(p.clone()),
                    Source::Config(c) => Source::Config(c.clone()),
                    Source::Engine(p, h) => Source::Engine(p.clone(), h.clone()),
                },
                throttle: s.throttle.clone(),
                replay_cap: s.replay_cap,
                max_attempts_cap: s.max_attempts_cap,
                name: s.name,
                breaker: s.breaker.clone(),
                budget: s.budget.clone(),
                adaptive: s.adaptive.clone(),
                bulkhead: s.bulkhead.clone(),
                methods: RwLock::new(HashMap::new()),
            });
        }
        let shared = Arc::get_mut(&mut self.shared).expect("just made unique");
        // A setting changes what each method's layer is: build them again.
        shared
            .methods
            .get_mut()
            .map(HashMap::clear)
            .unwrap_or_default();
        shared
    }

    /// The most bytes of a request body recorded for replay (default 64 KiB). A request larger
    /// than this is sent once: the call is committed to the attempt that sends it (with hedging,
    /// the copy that read the body past the cap; the others are not sent, or end without ending
    /// the call), and nothing beyond the cap is buffered.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(3, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// let layer = GrpcRetryLayer::new(policy).replay_cap(1024 * 1024);
    /// # let _ = layer;
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn replay_cap(mut self, bytes: usize) -> Self {
        self.shared_mut().replay_cap = bytes;
        self
    }

    /// Raises (or lowers) A6's cap on `maxAttempts` ([`DEFAULT_MAX_ATTEMPTS_CAP`]): a policy
    /// asking for more attempts makes this many.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(8, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// let layer = GrpcRetryLayer::new(policy).max_attempts_cap(8); // 8 attempts, not 5
    /// # let _ = layer;
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn max_attempts_cap(mut self, cap: u32) -> Self {
        self.shared_mut().max_attempts_cap = Some(cap.max(1));
        self
    }

    /// Throttles retries and hedges with `throttle` (A6's `retryThrottling`), shared with every
    /// layer given a clone of it. [`from_service_config`](Self::from_service_config) makes one
    /// from the config's `retryThrottling`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy, RetryThrottle};
    /// use tonic::Code;
    ///
    /// let throttle = RetryThrottle::new(10, 0.1)?;
    /// let policy = GrpcRetryPolicy::new(3, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// let layer = GrpcRetryLayer::new(policy).throttle(throttle.clone());
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn throttle(mut self, throttle: RetryThrottle) -> Self {
        self.shared_mut().throttle = Some(throttle);
        self
    }

    /// The name of the layer's calls in events and metrics (default `"grpc"`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy};
    /// use tonic::Code;
    ///
    /// let policy = GrpcRetryPolicy::new(3, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
    /// let layer = GrpcRetryLayer::new(policy).name("health");
    /// # let _ = layer;
    /// # Ok::<(), reattempt::tonic::ServiceConfigError>(())
    /// ```
    #[must_use]
    pub fn name(mut self, name: &'static str) -> Self {
        self.shared_mut().name = name;
        self
    }
}

impl Shared {
    /// The layer of the method at `path`, built on first use.
    fn method(&self, path: &str) -> Arc<MethodLayer> {
        if let Some(found) = self.methods.read().ok().and_then(|m| m.get(path).cloned()) {
            return found;
        }
        let built = Arc::new(match &self.config {
            Source::Retry(policy) => self.build(Some(policy), None, None),
            Source::Hedge(policy) => self.build(None, Some(policy), None),
            Source::Config(config) => {
                let method = config.method_config(path);
                self.build(
                    method.and_then(MethodConfig::retry_policy),
                    method.and_then(MethodConfig::hedging_policy),
                    method.and_then(MethodConfig::timeout),
                )
            }
            Source::Engine(policy, hooks) => MethodLayer {
                layer: self.guarded(RetryLayer::new((**policy).clone()).hooks(hooks.clone())),
                timeout: None,
            },
        });
        if let Ok(mut methods) = self.methods.write() {
            // Paths come from requests: keep the map from growing without bound on a client
            // that calls many distinct (or unknown) methods.
            if methods.len() >= 1024 {
                methods.clear();
            }
            methods.insert(path.into(), Arc::clone(&built));
        }
        built
    }

    fn build(
        &self,
        retry: Option<&GrpcRetryPolicy>,
        hedging: Option<&HedgingPolicy>,
        timeout: Option<Duration>,
    ) -> MethodLayer {
        // The layer's cap, when set, in place of the policy's own (A6's 5 by default).
        let cap = self.max_attempts_cap;
        let (mode, max_attempts, hedge_after) = match (retry, hedging) {
            (Some(p), _) => {
                let attempts = cap.map_or(p.max_attempts(), |c| {
                    p.clone().with_max_attempts_cap(c).max_attempts()
                });
                let mode = Mode::Retry {
                    codes: p.retryable_status_codes(),
                    initial: p.initial_backoff(),
                    multiplier: p.backoff_multiplier(),
                    max: p.max_backoff(),
                };
                (mode, attempts, None)
            }
            (None, Some(p)) => {
                let attempts = cap.map_or(p.max_attempts(), |c| {
                    p.clone().with_max_attempts_cap(c).max_attempts()
                });
                let mode = Mode::Hedge {
                    codes: p.non_fatal_status_codes(),
                };
                // A zero hedging delay: every copy at once (the engine's hedges start a
                // nanosecond apart).
                let delay = p.hedging_delay().max(Duration::from_nanos(1));
                (mode, attempts, Some(delay))
            }
            (None, None) => (Mode::Once, 1, None),
        };
        // The engine counts attempts, keeps the deadline and runs the hedges; the delays are
        // A6's, chosen by the hooks (`delay_for`), so its own schedule is plain and its
        // `max_delay` lets a pushback be waited exactly.
        let mut policy = RetryPolicy::builder()
            .max_attempts(max_attempts.clamp(1, PolicySettings::MAX_ATTEMPTS))
            .delay(Duration::from_millis(1))
            .jitter(Jitter::None)
            .max_delay(LONGEST_PUSHBACK);
        if let Some(after) = hedge_after {
            policy = policy.hedge_after(HedgeAfter::Fixed(after));
        }
        let policy = policy
            .build()
            .expect("the engine's policy under the gRPC layer is valid");
        let hooks = BoxedHooks::new(GrpcHooks::new(mode, self.throttle.clone()));
        MethodLayer {
            layer: self.guarded(RetryLayer::new(policy).hooks(hooks)),
            timeout,
        }
    }

    /// The layer with this layer's name, request copies and guards.
    fn guarded<C>(&self, layer: RetryLayer<BoxedHooks, C>) -> EngineLayerOf<C> {
        layer.name(self.name).replay(GrpcReplay).with_guard_slots(
            self.breaker.clone(),
            self.budget.clone(),
            self.adaptive.clone(),
            self.bulkhead.clone(),
        )
    }
}

impl<S, K> Layer<S> for GrpcRetryLayer<K> {
    type Service = GrpcRetryService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcRetryService {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service a [`GrpcRetryLayer`] makes: give it to a tonic client in place of the channel
/// (`HealthClient::new(layer.layer(channel))`).
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     use std::time::Duration;
///     use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy, GrpcRetryService};
///     use tonic::Code;
///     use tonic::transport::{Channel, Endpoint};
///     use tower::Layer;
///
///     struct Clients {
///         health: GrpcRetryService<Channel>,
///     }
///     let policy = GrpcRetryPolicy::new(3, Duration::from_millis(10), Duration::from_secs(1), 2.0, &[Code::Unavailable])?;
///     let channel = Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
///     let clients = Clients { health: GrpcRetryLayer::new(policy).layer(channel) };
/// # let _ = clients.health;
///     Ok(())
/// }
/// ```
#[derive(Clone, Debug)]
pub struct GrpcRetryService<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// The future of a [`GrpcRetryService`] call.
pub type GrpcResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<Body>, Status>> + Send + 'static>>;

impl<S, B> Service<Request<Body>> for GrpcRetryService<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Status;
    type Future = GrpcResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        self.inner
            .poll_ready(cx)
            .map_err(|e| attempt::transport_status(e.into()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let method = self.shared.method(request.uri().path());
        let (mut parts, body) = request.into_parts();
        // The call's deadline: the caller's `grpc-timeout` or the method's `timeout`, the
        // shorter, from now; every attempt and sleep fits in it.
        let timeout = match (grpc_timeout(&parts.headers), method.timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let now = Instant::now();
        let deadline = timeout.and_then(|t| now.checked_add(t));
        if let Some(deadline) = deadline {
            // Spent on entry (`grpc-timeout: 0n`): nothing is sent.
            if deadline <= now {
                return Box::pin(std::future::ready(Err(deadline_exceeded())));
            }
            parts.extensions.insert(CallDeadline(deadline));
        }
        let unsent = Unsent::default();
        parts.extensions.insert(unsent.clone());
        let body = ReplayBody::new(body, self.shared.replay_cap);
        let request = Request::from_parts(parts, body);
        // The readied channel makes the call; a clone takes its place (tower's pattern).
        let fresh = self.inner.clone();
        let channel = std::mem::replace(&mut self.inner, fresh);
        let mut retrying = method.layer.layer(Attempts::new(channel, self.shared.name));
        let call = retrying.call(request);
        let call = async move {
            let mut outcome = call.await;
            hooks::uncount_unsent(&mut outcome, unsent.0.load(Ordering::Relaxed));
            outcome
        };
        Box::pin(async move {
            let Some(deadline) = deadline else {
                return call.await;
            };
            let outcome = tokio::time::timeout_at(deadline, call).await;
            match outcome {
                Ok(Ok(response)) => Ok(response),
                // An attempt the transport cut at the deadline (tonic's own `grpc-timeout`
                // timer) ends as the deadline's, as A6's deadline does.
                Ok(Err(_)) | Err(_) if Instant::now() >= deadline => Err(deadline_exceeded()),
                Ok(Err(status)) => Err(status),
                Err(_) => Err(deadline_exceeded()),
            }
        })
    }
}

fn deadline_exceeded() -> Status {
    Status::deadline_exceeded("the call's deadline passed (grpc-timeout) across its attempts")
}
