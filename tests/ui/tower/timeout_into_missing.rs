//! A service whose error has no conversion from `Elapsed`, behind the tower layer: the error
//! says how to fix it (`.timeout_into(..)`, `.without_timeout()`, or `From<Elapsed>`).

use std::future::Ready;
use std::task::{Context, Poll};

use reattempt::RetryPolicy;
use reattempt::tower::RetryLayer;
use tower::{Layer, Service, ServiceExt};

#[derive(Debug)]
struct ClientError;

#[derive(Clone)]
struct Client;

impl Service<String> for Client {
    type Response = String;
    type Error = ClientError;
    type Future = Ready<Result<String, ClientError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: String) -> Self::Future {
        std::future::ready(Ok(request))
    }
}

async fn fetch() {
    let policy = RetryPolicy::builder().build().unwrap();
    let client = RetryLayer::new(policy).layer(Client);
    let _ = client.oneshot("ping".to_owned()).await;
}

fn main() {
    drop(fetch());
}
