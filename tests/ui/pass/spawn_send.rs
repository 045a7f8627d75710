#![deny(warnings, clippy::pedantic)]
//! A retryable method's future is `Send` when its parts are: it can be given to `tokio::spawn`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::{recover, retryable};

#[derive(Debug, PartialEq)]
enum PayError {
    Unavailable,
    Timeout,
}

impl From<reattempt::Elapsed> for PayError {
    fn from(_: reattempt::Elapsed) -> Self {
        PayError::Timeout
    }
}

struct Gateway {
    outages: AtomicU32,
}

impl Gateway {
    #[retryable(
        max_attempts = 4,
        delay = "100ms",
        timeout = "1s",
        max_elapsed = "10s",
        retry_on = [PayError::Unavailable | PayError::Timeout],
        on_retry = |e, ctx, d| eprintln!("{e:?} on attempt {}, next in {d:?}", ctx.attempt()),
        recover = Self::pending
    )]
    async fn charge(&self, order: String) -> Result<String, PayError> {
        let key = reattempt::context().map(|c| c.idempotency_key().to_string());
        tokio::task::yield_now().await;
        if self.outages.load(Ordering::SeqCst) > 0 {
            self.outages.fetch_sub(1, Ordering::SeqCst);
            return Err(PayError::Unavailable);
        }
        Ok(format!("{order} {}", key.is_some()))
    }

    #[recover]
    async fn pending(&self, err: PayError, order: String) -> Result<String, PayError> {
        Ok(format!("{order} pending after {err:?}"))
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let gateway = Arc::new(Gateway {
        outages: AtomicU32::new(2),
    });
    let g = Arc::clone(&gateway);
    let charged = tokio::spawn(async move { g.charge("o-1".to_owned()).await });
    assert_eq!(charged.await.unwrap(), Ok("o-1 true".to_owned()));
    gateway.outages.store(9, Ordering::SeqCst);
    let fut = assert_send(gateway.charge("o-2".to_owned()));
    assert_eq!(fut.await, Ok("o-2 pending after Unavailable".to_owned()));
}
