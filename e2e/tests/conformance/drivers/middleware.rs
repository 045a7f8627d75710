//! The reqwest middleware: a `reqwest_middleware` client made of `RetryMiddleware::new(policy)
//! .hooks(..).circuit_breaker(..).budget(..).throttle(..).bulkhead(..).name(..)` and a last
//! middleware that answers without a network: each request it gets is one attempt of the
//! probe's script, an `Ok(v)` becoming a response (`reqwest::Response` from an
//! `http::Response`) carrying `v` in a header, an `Err(e)` the error
//! `reqwest_middleware::Error::Middleware(e)`.
//!
//! The middleware's error type is `reqwest_middleware::Error`, so its hooks (one [`Hooks`]
//! value, `'static`, holding the probe's `Arc`) map each error back to the row's class first: a
//! scripted [`TestError`], or what the runtime put in `Error::Middleware` (`Elapsed`: the
//! policy's timeout cut the attempt; `BreakerOpen`, `Throttled`, `BulkheadFull`: a guard turned
//! it away), then ask the same `retryable`, `hint`, `retry_ok` and `is_timeout` as every other
//! driver. The guards are clones of the harness's `Arc`s. Its events name
//! `reqwest_middleware::Error` as the error type ([`Driver::normalized`]).
//!
//! It runs every row: nothing in the table is beyond it.

use std::time::Duration;

use reattempt::reqwest_middleware::RetryMiddleware;
use reattempt::{Hooks, RetryContext, Transient};
use reqwest_middleware::{ClientBuilder, Error, Middleware, Next};

use super::{CallFuture, Driver, Env};
use crate::expect::NAME;
use crate::harness::Probe;
use crate::model::{Ev, TestError, hint, paced, retry_ok, retryable};

pub struct ReqwestMiddleware;

/// The header of a response carrying the scripted `Ok` value.
const VALUE: &str = "x-conformance-value";

/// The last middleware: plays one step of the script per request, without a network.
struct Scripted(std::sync::Arc<Probe>);

#[async_trait::async_trait]
impl Middleware for Scripted {
    async fn handle(
        &self,
        _: reqwest::Request,
        _: &mut http::Extensions,
        _: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        match self.0.attempt().await {
            Ok(v) => {
                let response = http::Response::builder()
                    .header(VALUE, v)
                    .body("")
                    .expect("a valid response");
                Ok(reqwest::Response::from(response))
            }
            Err(e) => Err(Error::middleware(e)),
        }
    }
}

/// The row's class of an error the middleware returned.
fn class(error: &Error) -> TestError {
    let Error::Middleware(e) = error else {
        panic!("no network, so no reqwest error: {error:?}")
    };
    super::row_class(&**e).unwrap_or_else(|| panic!("an error the table does not script: {e:?}"))
}

/// The scripted value of a response.
fn value(response: &reqwest::Response) -> u32 {
    response.headers()[VALUE]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number")
}

/// Every driver's hooks, over the middleware's types.
#[derive(Clone)]
struct Classes(std::sync::Arc<Probe>);

impl Hooks<reqwest::Response, Error> for Classes {
    fn retry_if(&mut self, error: &Error) -> bool {
        retryable(&class(error))
    }
    fn retry_if_ok(&mut self, response: &reqwest::Response) -> bool {
        retry_ok(&value(response))
    }
    fn retry_after(&mut self, error: &Error) -> Option<Duration> {
        hint(&class(error))
    }
    fn on_retry(&mut self, error: &Error, context: &RetryContext, delay: Duration) {
        self.0.on_retry(&class(error), context.attempt(), delay);
    }
    fn is_timeout(&mut self, error: &Error) -> bool {
        class(error).is_timeout()
    }
    fn delay_for(&mut self, error: &Error, attempt: u32, computed: Duration) -> Option<Duration> {
        paced(&class(error), attempt, computed)
    }
    fn class(&mut self, error: &Error) -> reattempt::ErrorClass {
        reattempt::Transient::class(&class(error))
    }
}

impl Driver for ReqwestMiddleware {
    fn name(&self) -> &'static str {
        "middleware"
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
        let mut retry = RetryMiddleware::new(policy.clone())
            .hooks(Classes(probe.clone()))
            .name(NAME);
        if let Some(b) = breaker {
            retry = retry.circuit_breaker(b.clone());
        }
        if let Some(b) = budget {
            retry = retry.budget(b.clone());
        }
        if let Some(t) = throttle {
            retry = retry.throttle(t.clone());
        }
        if let Some(b) = bulkhead {
            retry = retry.bulkhead(b.clone());
        }
        let client = ClientBuilder::new(reqwest::Client::new())
            .with(retry)
            .with(Scripted(probe.clone()))
            .build();
        Box::pin(async move {
            match client.get("http://conformance.invalid/").send().await {
                Ok(response) => Ok(value(&response)),
                Err(error) => Err(class(&error)),
            }
        })
    }

    fn normalized(&self, events: Vec<Ev>) -> Vec<Ev> {
        super::naming_test_error::<Error>(events)
    }
}
