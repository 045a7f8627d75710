//! End to end over real HTTP on loopback, through the reqwest-middleware client:
//! `RetryMiddleware::new(policy).idempotency_key_header()` against the fault-injecting service.
//! A lost response, a 503, a 429 with `Retry-After` (both forms): charged exactly once, every
//! attempt carrying the call's one key; a 400 is sent once; a streaming body is refused with a
//! typed error, never sent once silently.

use std::time::Duration;

use reattempt::reqwest_middleware::{NotReplayable, RetryMiddleware};
use reattempt_support::payments::quick;
use reattempt_support::{Fault, Outcome, RetryAfter, Service};
use reqwest::StatusCode;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

fn client() -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(quick())
                .idempotency_key_header()
                .name("middleware-charge"),
        )
        .build()
}

async fn send(service: &Service, order: &str, amount: i64) -> (StatusCode, String) {
    let body = format!(r#"{{"order_id":"{order}","amount_cents":{amount}}}"#);
    let resp = client()
        .post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("an answer");
    let status = resp.status();
    (status, resp.text().await.expect("a body"))
}

async fn charged_once(faults: Vec<Fault>) -> Service {
    let service = Service::start().await;
    service.script_for("o-1", faults.clone());
    let (status, body) = send(&service, "o-1", 1250).await;
    assert_eq!(status, StatusCode::CREATED, "{faults:?}: {body}");
    assert_eq!(
        service.effects("o-1"),
        1,
        "{faults:?}: charged exactly once"
    );
    let seen = service.seen_for("o-1");
    assert_eq!(
        seen.len(),
        faults.len() + 1,
        "{faults:?}: one request per fault, then one"
    );
    let key = seen[0].key.clone().expect("an Idempotency-Key");
    assert!(seen.iter().all(|s| s.key.as_ref() == Some(&key)), "one key");
    service
}

#[tokio::test]
async fn a_lost_response_is_charged_once() {
    let service = charged_once(vec![Fault::LoseResponse]).await;
    assert_eq!(service.seen_for("o-1")[1].outcome, Outcome::Replayed);
}

#[tokio::test]
async fn a_503_is_charged_once() {
    charged_once(vec![Fault::Unavailable]).await;
}

#[tokio::test]
async fn a_429_is_retried_no_earlier_than_its_retry_after() {
    for form in [
        RetryAfter::Seconds(1),
        RetryAfter::Date(Duration::from_millis(500)),
    ] {
        let service = charged_once(vec![Fault::RateLimited(form)]).await;
        let seen = service.seen_for("o-1");
        let not_before = seen[0].retry_not_before.expect("a 429 says when");
        assert!(seen[1].wall >= not_before, "{form:?}: came back too early");
    }
}

#[tokio::test]
async fn a_400_is_sent_once() {
    let service = Service::start().await;
    let (status, _) = send(&service, "o-bad", -5).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(service.seen_for("o-bad").len(), 1);
}

#[tokio::test]
async fn a_streaming_body_is_a_typed_error_and_is_not_sent() {
    let service = Service::start().await;
    let stream = futures_stream();
    let err = client()
        .post(format!("{}/charges", service.url()))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .expect_err("not replayable");
    let reqwest_middleware::Error::Middleware(e) = &err else {
        panic!("{err:?}")
    };
    assert!(e.downcast_ref::<NotReplayable>().is_some(), "{err:?}");
    assert_eq!(service.request_count(), 0, "nothing sent");
}

/// A one-chunk body stream.
fn futures_stream()
-> impl futures_core::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + Sync + 'static {
    struct One(Option<bytes::Bytes>);
    impl futures_core::Stream for One {
        type Item = Result<bytes::Bytes, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.take().map(Ok))
        }
    }
    One(Some(bytes::Bytes::from_static(b"{}")))
}

/// The attribute's hooks, by their names, through `RetryMiddleware::hooks`: a classification
/// that also retries a 400 (here: to see it obeyed), asked once per answer.
#[tokio::test]
async fn custom_hooks_classify_and_are_told_of_each_retry() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use reattempt::reqwest_middleware::HttpClassify;
    use reattempt::{Hooks, RetryContext};

    #[derive(Clone)]
    struct RetryBadRequests(Arc<AtomicU32>);

    impl Hooks<reqwest::Response, reqwest_middleware::Error> for RetryBadRequests {
        fn retry_if(&mut self, e: &reqwest_middleware::Error) -> bool {
            HttpClassify.retry_if(e)
        }
        fn retry_if_ok(&mut self, r: &reqwest::Response) -> bool {
            self.0.fetch_add(1, Ordering::Relaxed);
            r.status() == StatusCode::BAD_REQUEST
        }
        fn on_retry(&mut self, _: &reqwest_middleware::Error, _: &RetryContext, _: Duration) {}
    }

    let service = Service::start().await;
    let asked = Arc::new(AtomicU32::new(0));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(quick()).hooks(RetryBadRequests(asked.clone())))
        .build();
    let resp = client
        .post(format!("{}/charges", service.url()))
        .header("content-type", "application/json")
        .body(r#"{"order_id":"o-9","amount_cents":-5}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "the last answer");
    let attempts = quick().max_attempts();
    assert_eq!(
        service.seen_for("o-9").len(),
        attempts as usize,
        "every attempt made"
    );
    assert_eq!(
        asked.load(Ordering::Relaxed),
        attempts,
        "asked once per answer"
    );
    assert_eq!(service.effects("o-9"), 0);
}
