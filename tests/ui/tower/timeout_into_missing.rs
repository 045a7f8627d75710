//! A service whose error has no conversion from `Elapsed`, behind the tower layer. Where the
//! request type is known (a function returning `impl Service<String>`), the error names the
//! missing conversion and the fixes (`.timeout_into(..)`, `.without_timeout()`,
//! `From<Elapsed>`). Through `oneshot`, whose request type rustc has not inferred when it looks
//! the method up, it can only say "trait bounds were not satisfied" (the layer's rustdoc
//! explains it).

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

fn client() -> impl Service<String, Response = String, Error = ClientError> {
    let policy = RetryPolicy::builder().build().unwrap();
    RetryLayer::new(policy).layer(Client)
}

fn main() {
    drop(fetch());
    drop(client());
}
