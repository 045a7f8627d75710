//! As `timeout_into_missing.rs`, where the request type is known (a function returning
//! `impl Service<String>`): the error names the missing conversion and the fix.

use std::future::Ready;
use std::task::{Context, Poll};

use reattempt::RetryPolicy;
use reattempt::tower::RetryLayer;
use tower::{Layer, Service};

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

fn client() -> impl Service<String, Response = String, Error = ClientError> {
    let policy = RetryPolicy::builder().build().unwrap();
    RetryLayer::new(policy).layer(Client)
}

fn main() {
    drop(client());
}
