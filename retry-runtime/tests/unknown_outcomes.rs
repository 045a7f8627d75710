//! The unknown-outcomes rule where the hostile review found it broken: `transient` asked in
//! `retry_if_ok`, an HTTP response kept from a retry by the safety rule, `remaining()` after an
//! injected latency in the tower layer, and a hedged policy on a call that does not say it is
//! idempotent. Each test here failed before its fix.

use std::cell::Cell;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::{HedgeAfter, RetryPolicy, transient};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Layer, SubscriberExt};

const MS: Duration = Duration::from_millis(1);

/// A subscriber for a test that reads no event: every test of this file sets one, so that no
/// thread registers a callsite of the crate's events without one (an interest of "never" that a
/// test reading events on another thread would meet).
fn quiet() -> tracing::subscriber::DefaultGuard {
    tracing::subscriber::set_default(tracing_subscriber::registry().with(Reasons::default()))
}

/// The `reason` field of every give-up event.
#[derive(Clone, Default)]
struct Reasons(Arc<Mutex<Vec<String>>>);

struct ReasonField<'a>(&'a mut Option<String>);

impl Visit for ReasonField<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "reason" {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: Subscriber> Layer<S> for Reasons {
    fn on_event(&self, event: &Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut reason = None;
        event.record(&mut ReasonField(&mut reason));
        if let Some(reason) = reason {
            self.0.lock().unwrap().push(reason);
        }
    }
}

/// `transient` of an HTTP status returned as an `Ok` value follows the rule as it does for an
/// error: a 503 may come after the server acted, so a call that is not idempotent does not
/// repeat it, and gives up for that reason.
#[cfg(feature = "http")]
#[tokio::test(start_paused = true)]
async fn transient_in_retry_if_ok_follows_the_rule() {
    use http::StatusCode;
    let reasons = Reasons::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(reasons.clone()));
    let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    let calls = Cell::new(0);
    let out = policy
        .retry(|| {
            calls.set(calls.get() + 1);
            async { Ok::<_, io::Error>(StatusCode::SERVICE_UNAVAILABLE) }
        })
        .retry_if_ok(|s: &StatusCode| transient(s))
        .await;
    assert_eq!(out.unwrap(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        calls.replace(0),
        1,
        "a 503 may have acted; the call is not idempotent"
    );
    assert_eq!(
        *reasons.0.lock().unwrap(),
        ["outcome unknown and the call is not idempotent"]
    );
    // Said idempotent: repeated until the attempts run out.
    let _ = policy
        .retry(|| {
            calls.set(calls.get() + 1);
            async { Ok::<_, io::Error>(StatusCode::SERVICE_UNAVAILABLE) }
        })
        .retry_if_ok(|s: &StatusCode| transient(s))
        .idempotent(true)
        .await;
    assert_eq!(calls.get(), 3);
}

/// A POST kept from a retry by HTTP's safety rule gives up for an unknown outcome, whether the
/// failure is an error (a reset) or a response (a 503).
#[cfg(all(feature = "tower", feature = "http"))]
mod tower_http {
    use super::*;
    use ::http::{Request, Response, StatusCode};
    use retry_runtime::tower::RetryLayer;
    use std::future::poll_fn;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Context, Poll};
    use tower::{Layer as _, Service};

    #[derive(Clone)]
    struct Answer(Result<u16, io::ErrorKind>, Arc<AtomicU32>);

    impl Service<Request<String>> for Answer {
        type Response = Response<String>;
        type Error = io::Error;
        type Future = std::future::Ready<io::Result<Response<String>>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: Request<String>) -> Self::Future {
            self.1.fetch_add(1, Ordering::SeqCst);
            std::future::ready(match self.0 {
                Ok(status) => {
                    let mut r = Response::new(String::new());
                    *r.status_mut() = StatusCode::from_u16(status).unwrap();
                    Ok(r)
                }
                Err(kind) => Err(kind.into()),
            })
        }
    }

    async fn reasons_for(answer: Result<u16, io::ErrorKind>) -> (Vec<String>, u32) {
        let reasons = Reasons::default();
        let _guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(reasons.clone()));
        let calls = Arc::new(AtomicU32::new(0));
        let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
        let mut svc = RetryLayer::new(policy)
            .http()
            .layer(Answer(answer, Arc::clone(&calls)));
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        let request = Request::post("http://pay.test/charges")
            .body("{}".to_owned())
            .unwrap();
        let _ = svc.call(request).await;
        let reasons = reasons.0.lock().unwrap().clone();
        (reasons, calls.load(Ordering::SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn a_post_reset_and_a_post_503_give_up_alike() {
        let unknown = "outcome unknown and the call is not idempotent";
        assert_eq!(
            reasons_for(Err(io::ErrorKind::ConnectionReset)).await,
            (vec![unknown.to_owned()], 1)
        );
        assert_eq!(reasons_for(Ok(503)).await, (vec![unknown.to_owned()], 1));
        // A refused connection proves nothing was sent: retried, POST or not.
        let (_, calls) = reasons_for(Err(io::ErrorKind::ConnectionRefused)).await;
        assert_eq!(calls, 3);
    }
}

/// An injected latency before a tower layer's attempt counts against its limit, as
/// `remaining()` says, through the layer as through the closure API.
#[cfg(all(feature = "tower", feature = "testing"))]
mod tower_remaining {
    use super::*;
    use retry_runtime::context;
    use retry_runtime::testing::FaultInjection;
    use retry_runtime::tower::RetryLayer;
    use std::future::poll_fn;
    use std::task::{Context, Poll};
    use tower::{Layer as _, Service};

    #[derive(Clone)]
    struct Remaining;

    impl Service<()> for Remaining {
        type Response = Option<Duration>;
        type Error = io::Error;
        type Future = std::future::Ready<io::Result<Option<Duration>>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, (): ()) -> Self::Future {
            std::future::ready(Ok(context().expect("inside an attempt").remaining()))
        }
    }

    fn policy() -> RetryPolicy {
        let faults = FaultInjection::builder()
            .rate(0.0)
            .latency(50 * MS)
            .latency_rate(1.0)
            .seed(1)
            .build()
            .unwrap();
        RetryPolicy::builder()
            .timeout(200 * MS)
            .inject_faults(faults)
            .build()
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn after_an_injected_latency_the_attempt_has_the_rest_of_its_limit() {
        let _quiet = quiet();
        let left = policy()
            .retry(|| async { Ok::<_, io::Error>(context().unwrap().remaining()) })
            .await
            .unwrap();
        assert_eq!(left, Some(150 * MS), "the closure API");
        let mut svc = RetryLayer::new(policy()).layer(Remaining);
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        assert_eq!(
            svc.call(()).await.unwrap(),
            Some(150 * MS),
            "the tower layer"
        );
    }
}

/// A hedged policy on a call that does not say it is idempotent starts no hedge, and repeats a
/// reset (unknown outcome) no more than an unhedged call does; a refused connection (nothing
/// done) is retried.
#[tokio::test(start_paused = true)]
async fn a_hedged_policy_does_not_hedge_a_call_not_said_idempotent() {
    let _quiet = quiet();
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .hedge_after(HedgeAfter::Fixed(50 * MS))
        .build()
        .unwrap();
    for (kind, calls_made) in [
        (io::ErrorKind::ConnectionReset, 1),
        (io::ErrorKind::ConnectionRefused, 3),
    ] {
        let calls = Cell::new(0);
        let started = tokio::time::Instant::now();
        let _ = policy
            .retry(|| {
                calls.set(calls.get() + 1);
                async move {
                    tokio::time::sleep(100 * MS).await;
                    Err::<(), _>(io::Error::from(kind))
                }
            })
            .retry_if(transient)
            .await;
        assert_eq!(calls.get(), calls_made, "{kind:?}");
        if calls_made == 1 {
            assert_eq!(started.elapsed(), 100 * MS, "no hedge at 50 ms");
        }
    }
}
