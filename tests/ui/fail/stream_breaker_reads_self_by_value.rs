//! A key beside `resume` that borrows a by-value `self`, which the stream's opens own.
use std::sync::Arc;

use futures_util::Stream;
use reattempt::{CircuitBreaker, retryable};

#[derive(Debug)]
enum Error {
    Open,
}

impl From<reattempt::BreakerOpen> for Error {
    fn from(_: reattempt::BreakerOpen) -> Self {
        Error::Open
    }
}

#[derive(Clone)]
struct Client {
    breaker: Arc<CircuitBreaker>,
}

impl Client {
    #[retryable(circuit_breaker = self.breaker, resume = |offset, _n: &u64| *offset += 1)]
    async fn lines(self, offset: u64) -> Result<impl Stream<Item = Result<u64, Error>>, Error> {
        let _ = &self.breaker;
        Ok(futures_util::stream::iter((offset..3).map(Ok)))
    }
}

fn main() {
    let _ = Error::Open;
}
