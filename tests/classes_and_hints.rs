//! Error classes and server hints where the drivers meet a response (tests written by the
//! hostile review of the classes, each failing before its fix): a 503 the server says not to
//! retry is still a failure (breaker, budget); a retried 429 waits `throttling_delay` in every
//! driver that can say so (the tower layer's `.http()`, the closure API with `.ok_class(..)`, the
//! attribute); `delay_for_ok` chooses a retried response's delay.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use reattempt::Preset;
use reattempt::tower::RetryLayer;
use reattempt::{BreakerState, CircuitBreaker, ErrorClass, Jitter, RetryBudget, RetryPolicy};
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

const MS: Duration = Duration::from_millis(1);

fn respond(status: u16, headers: &[(&'static str, &'static str)]) -> Response<String> {
    let mut r = Response::new(String::new());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        r.headers_mut().insert(*k, v.parse().unwrap());
    }
    r
}

// ---------------------------------------------------------------------------------------------
// 1. `x-should-retry: false` on a 503: the failure is recorded as a success by the breaker and
//    deposits into the budget (it goes down the "accepted Ok" path).

#[tokio::test(start_paused = true)]
async fn a_503_with_x_should_retry_false_is_still_a_failure_for_the_breaker() {
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(3)
            .build()
            .unwrap(),
    );
    let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    let svc = service_fn(|_: Request<String>| async {
        Ok::<_, tower::BoxError>(respond(503, &[("x-should-retry", "false")]))
    });
    let client = RetryLayer::new(policy)
        .http()
        .without_timeout()
        .circuit_breaker(Arc::clone(&breaker))
        .layer(svc);
    for _ in 0..3 {
        let r = client
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
    }
    assert!(
        client
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .is_err(),
        "the fourth call is turned away by the open breaker"
    );
    assert_eq!(
        breaker.state(),
        BreakerState::Open,
        "three 503s in a row: the dependency is failing, whatever it says about retrying"
    );
}

#[tokio::test(start_paused = true)]
async fn a_503_with_x_should_retry_false_deposits_nothing_into_the_budget() {
    let budget = Arc::new(RetryBudget::builder().max_tokens(10).build().unwrap());
    while budget.try_withdraw_for(ErrorClass::Transient) {}
    let before = budget.available();
    let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    let svc = service_fn(|_: Request<String>| async {
        Ok::<_, Infallible>(respond(503, &[("x-should-retry", "false")]))
    });
    let client = RetryLayer::new(policy)
        .http()
        .without_timeout()
        .budget(Arc::clone(&budget))
        .layer(svc);
    for _ in 0..5 {
        client
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap();
    }
    assert_eq!(
        budget.available(),
        before,
        "five failed calls (503s) refilled the budget as five first-try successes would"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. The class of a retried `Ok` (a 429 response): the tower layer's `.http()` says throttling
//    (waits `throttling_delay`), the closure API and the attribute cannot say it (wait `delay`).

fn throttling_policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(2)
        .delay(10 * MS)
        .throttling_delay(Duration::from_secs(1))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn tower_http_waits_throttling_delay_after_a_429() {
    let n = Arc::new(AtomicU32::new(0));
    let svc = service_fn(move |_: Request<String>| {
        let n = Arc::clone(&n);
        async move {
            let s = if n.fetch_add(1, SeqCst) == 0 {
                429
            } else {
                200
            };
            Ok::<_, Infallible>(respond(s, &[]))
        }
    });
    let client = RetryLayer::new(throttling_policy())
        .http()
        .without_timeout()
        .layer(svc);
    let t0 = Instant::now();
    let r = client.oneshot(Request::new(String::new())).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
}

#[tokio::test(start_paused = true)]
async fn closure_api_waits_throttling_delay_after_a_retried_429() {
    let policy = throttling_policy();
    let n = AtomicU32::new(0);
    let t0 = Instant::now();
    let r = policy
        .retry(|| {
            let first = n.fetch_add(1, SeqCst) == 0;
            async move {
                Ok::<_, std::io::Error>(if first {
                    StatusCode::TOO_MANY_REQUESTS
                } else {
                    StatusCode::OK
                })
            }
        })
        .retry_if_ok(|s: &StatusCode| *s == StatusCode::TOO_MANY_REQUESTS)
        .ok_class(reattempt::error_class)
        .await
        .unwrap();
    assert_eq!(r, StatusCode::OK);
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "the tower layer waits throttling_delay for the same 429; the closure API waited {:?}",
        t0.elapsed()
    );
}

static ATTR_CALLS: AtomicU32 = AtomicU32::new(0);

#[reattempt::retryable(
    max_attempts = 2,
    delay = "10ms",
    throttling_delay = "1s",
    jitter = "none",
    retry_if_ok = |s: &StatusCode| *s == StatusCode::TOO_MANY_REQUESTS
)]
async fn attr_429_then_ok() -> Result<StatusCode, std::io::Error> {
    Ok(if ATTR_CALLS.fetch_add(1, SeqCst) == 0 {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::OK
    })
}

#[tokio::test(start_paused = true)]
async fn attribute_waits_throttling_delay_after_a_retried_429() {
    let t0 = Instant::now();
    assert_eq!(attr_429_then_ok().await.unwrap(), StatusCode::OK);
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "throttling_delay = \"1s\" set, a 429 retried: waited {:?}",
        t0.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. `delay_for` is never asked for a retried `Ok` (every HTTP status retry of the HTTP drivers).

#[tokio::test(start_paused = true)]
async fn delay_for_ok_chooses_the_delay_of_a_retried_503_response() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .delay(10 * MS)
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let n = Arc::new(AtomicU32::new(0));
    let svc = service_fn(move |_: Request<String>| {
        let n = Arc::clone(&n);
        async move {
            let s = if n.fetch_add(1, SeqCst) == 0 {
                503
            } else {
                200
            };
            Ok::<_, Infallible>(respond(s, &[]))
        }
    });
    let client = RetryLayer::new(policy)
        .http()
        .without_timeout()
        .delay_for_ok(|_: &Response<String>, _, _| Some(Duration::from_millis(500)))
        .layer(svc);
    let t0 = Instant::now();
    let r = client.oneshot(Request::new(String::new())).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(500),
        "delay_for_ok said 500 ms"
    );
}

#[test]
fn aws_standard_budget_is_the_same_as_the_default_builder() {
    let default = RetryBudget::builder()
        .max_tokens(8)
        .build()
        .map(|b| b.cost(ErrorClass::Timeout));
    let preset = RetryBudget::aws_standard()
        .max_tokens(8)
        .build()
        .map(|b| b.cost(ErrorClass::Timeout));
    assert_eq!(preset.ok(), default.ok());
}

#[test]
fn a_preset_policy_takes_a_lower_max_delay() {
    let p = Preset::Aws2026
        .policy()
        .max_delay(Duration::from_millis(500))
        .build()
        .unwrap();
    assert_eq!(
        p.throttling_delay(),
        Duration::from_millis(500),
        "capped, as every delay"
    );
}

/// `.http()` may come after the error settings, which it keeps (`on_retry` here).
#[tokio::test(start_paused = true)]
async fn http_comes_after_the_error_settings_and_keeps_them() {
    let retried = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&retried);
    let n = Arc::new(AtomicU32::new(0));
    let svc = service_fn(move |_: Request<String>| {
        let n = Arc::clone(&n);
        async move {
            if n.fetch_add(1, SeqCst) == 0 {
                Err::<Response<String>, _>(tower::BoxError::from("reset"))
            } else {
                Ok(respond(200, &[]))
            }
        }
    });
    let client = RetryLayer::new(RetryPolicy::builder().max_attempts(2).build().unwrap())
        .on_retry(move |_: &tower::BoxError, _: &reattempt::RetryContext, _| {
            counter.fetch_add(1, SeqCst);
        })
        .http()
        .without_timeout()
        .layer(svc);
    let r = client.oneshot(Request::new(String::new())).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        retried.load(SeqCst),
        1,
        "the on_retry set before .http() ran"
    );
}
