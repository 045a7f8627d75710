//! The gRPC layer: `GrpcRetryLayer::from_policy(policy).hooks(..).circuit_breaker(..)
//! .budget(..).adaptive_throttle(..).bulkhead(..).name(..)` around an in-process transport (a
//! `Service<http::Request<tonic::body::Body>>`) whose every call is one attempt of the probe's
//! script: an `Ok(v)` becomes a gRPC response with headers carrying `v`, an `Err(e)` a `Status`
//! whose source is `e`.
//!
//! The layer's error type is `tonic::Status`, so its hooks (one [`Hooks`] value, `'static`,
//! holding the probe's `Arc`) map each status back to the row's class first: a scripted
//! [`TestError`] in its sources, or what the runtime made a status of (`Elapsed`: the policy's
//! timeout cut the attempt; `BreakerOpen`, `Throttled`, `BulkheadFull`: a guard turned it away),
//! then ask the same `retryable`, `hint`, `retry_ok`, `paced` and `is_timeout` as every other
//! driver. The guards are clones of the harness's `Arc`s. Its events name `tonic::Status` as the
//! error type ([`Driver::normalized`]).
//!
//! It runs every row: the gRPC layer is the tower layer's engine with gRPC's transport below it.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use reattempt::tonic::GrpcRetryLayer;
use reattempt::{Hooks, RetryContext, Transient};
use tonic::Status;
use tonic::body::Body;
use tower_layer::Layer;
use tower_service::Service;

use super::{CallFuture, Driver, Env};
use crate::expect::NAME;
use crate::harness::Probe;
use crate::model::{Ev, TestError, hint, paced, retry_ok, retryable};

pub struct Grpc;

/// The header of a response carrying the scripted `Ok` value.
const VALUE: &str = "x-conformance-value";

/// The transport: plays one step of the script per request.
#[derive(Clone)]
struct Scripted(Arc<Probe>);

impl Service<http::Request<Body>> for Scripted {
    type Response = http::Response<Body>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Status>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        let probe = Arc::clone(&self.0);
        Box::pin(async move {
            match probe.attempt().await {
                Ok(v) => Ok(http::Response::builder()
                    .header("content-type", "application/grpc")
                    .header(VALUE, v)
                    .body(Body::empty())
                    .expect("a valid response")),
                Err(e) => {
                    let mut status = Status::unavailable(e.to_string());
                    status.set_source(Arc::new(e));
                    Err(status)
                }
            }
        })
    }
}

/// The row's class of a status the layer returned.
fn class(status: &Status) -> TestError {
    let source = std::error::Error::source(status)
        .unwrap_or_else(|| panic!("every status here has a source: {status:?}"));
    super::row_class(source)
        .unwrap_or_else(|| panic!("a status the table does not script: {status:?}"))
}

/// The scripted value of a response.
fn value(response: &http::Response<Body>) -> u32 {
    response.headers()[VALUE]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number")
}

/// Every driver's hooks, over the layer's types.
#[derive(Clone)]
struct Classes(Arc<Probe>);

impl Hooks<http::Response<Body>, Status> for Classes {
    fn retry_if(&mut self, status: &Status) -> bool {
        retryable(&class(status))
    }
    fn retry_if_ok(&mut self, response: &http::Response<Body>) -> bool {
        retry_ok(&value(response))
    }
    fn retry_after(&mut self, status: &Status) -> Option<Duration> {
        hint(&class(status))
    }
    fn on_retry(&mut self, status: &Status, context: &RetryContext, delay: Duration) {
        self.0.on_retry(&class(status), context.attempt(), delay);
    }
    fn is_timeout(&mut self, status: &Status) -> bool {
        class(status).is_timeout()
    }
    fn delay_for(&mut self, status: &Status, attempt: u32, computed: Duration) -> Option<Duration> {
        paced(&class(status), attempt, computed)
    }
    fn class(&mut self, status: &Status) -> reattempt::ErrorClass {
        Transient::class(&class(status))
    }
}

impl Driver for Grpc {
    fn name(&self) -> &'static str {
        "grpc"
    }

    fn call<'a>(&self, env: Env<'a>) -> CallFuture<'a> {
        let Env {
            policy,
            breaker,
            budget,
            throttle,
            bulkhead,
            probe,
        } = env;
        let mut layer = GrpcRetryLayer::from_policy(policy.clone())
            .hooks(Classes(Arc::clone(probe)))
            .name(NAME);
        if let Some(b) = breaker {
            layer = layer.circuit_breaker(Arc::clone(b));
        }
        if let Some(b) = budget {
            layer = layer.budget(Arc::clone(b));
        }
        if let Some(t) = throttle {
            layer = layer.adaptive_throttle(Arc::clone(t));
        }
        if let Some(b) = bulkhead {
            layer = layer.bulkhead(Arc::clone(b));
        }
        let mut service = layer.layer(Scripted(Arc::clone(probe)));
        Box::pin(async move {
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(|s| class(&s))?;
            let request = http::Request::post("http://conformance.invalid/conformance.Svc/Call")
                .body(Body::empty())
                .expect("a valid request");
            match service.call(request).await {
                Ok(response) => Ok(value(&response)),
                Err(status) => Err(class(&status)),
            }
        })
    }

    fn normalized(&self, events: Vec<Ev>) -> Vec<Ev> {
        super::naming_test_error::<Status>(events)
    }
}
