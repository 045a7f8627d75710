//! Hedged HTTP calls through the tower layer (`ReplayBodyLayer` over `RetryLayer::http()`)
//! whose request body goes past the replay cap, under tokio's paused clock: the call is
//! committed to the copy that holds the body; a copy left behind by the cap (its body clone
//! yields `BodyNotReplayable`) never ends the call, whatever the user's classification says.

#![cfg(all(feature = "tower", feature = "http"))]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use retry_runtime::http::ReplayBody;
use retry_runtime::tower::{ReplayBodyLayer, RetryLayer};
use retry_runtime::{HedgeAfter, RetryPolicy};
use tower_layer::Layer;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body of chunks, 1 ms apart (a hedge 1 ms in starts before the cap is passed).
struct Chunks(VecDeque<Bytes>, Option<Pin<Box<tokio::time::Sleep>>>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if let Some(sleep) = self.1.as_mut() {
            std::task::ready!(sleep.as_mut().poll(cx));
        }
        self.1 = Some(Box::pin(tokio::time::sleep(Duration::from_millis(1))));
        Poll::Ready(self.0.pop_front().map(|c| Ok(http_body::Frame::data(c))))
    }
}

/// The transport: a copy whose body fails fails with the body's error as its source (as
/// hyper's client reports it); the copy that reads the body whole answers 201 after 20 ms.
#[derive(Clone, Default)]
struct Server {
    calls: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct SendFailed(BoxError);
impl std::fmt::Display for SendFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("error sending request")
    }
}
impl std::error::Error for SendFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl Service<http::Request<ReplayBody<Chunks>>> for Server {
    type Response = http::Response<String>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<ReplayBody<Chunks>>) -> Self::Future {
        self.calls.fetch_add(1, SeqCst);
        Box::pin(async move {
            if let Err(error) = request.into_body().collect().await {
                return Err(Box::new(SendFailed(error)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(http::Response::builder().status(201).body(String::new())?)
        })
    }
}

fn request() -> http::Request<Chunks> {
    let chunks = (0..10_u8).map(|i| Bytes::from(vec![i; 8])).collect();
    http::Request::put("http://api.test/upload")
        .body(Chunks(chunks, None))
        .unwrap()
}

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(3)
        .hedge_after(HedgeAfter::Fixed(Duration::from_millis(1)))
        .build()
        .unwrap()
}

/// A user's classification that retries nothing it does not know (a connect error, say): it
/// cannot tell a copy left behind by the cap, which must not end the call.
#[tokio::test(start_paused = true)]
async fn a_left_behind_copy_does_not_end_a_hedged_http_call_under_the_users_retry_if() {
    let server = Server::default();
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let layer = RetryLayer::new(policy())
        .retry_if(move |e: &BoxError| {
            counted.fetch_add(1, SeqCst);
            e.to_string().contains("connect")
        })
        .http();
    let mut svc = ReplayBodyLayer::new(40).layer(layer.layer(server.clone()));
    let out = svc.call(request()).await;
    assert!(
        server.calls.load(SeqCst) >= 2,
        "a hedge was sent before the cap"
    );
    let response = out.expect("the copy holding the body answers 201");
    assert_eq!(response.status(), 201);
    assert_eq!(
        asked.load(SeqCst),
        0,
        "the classification never sees a copy left behind"
    );
}
