#![deny(warnings, clippy::pedantic)]
//! A trait with native `async fn`, implemented with `#[retryable]` on the impl's method.

use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::retryable;

#[derive(Debug, PartialEq)]
enum StoreError {
    Unavailable,
}

trait Store {
    async fn get(&self, key: &str) -> Result<String, StoreError>;
    fn get_blocking(&self, key: String) -> Result<String, StoreError>;
}

struct Flaky {
    outages: AtomicU32,
}

impl Store for Flaky {
    #[retryable(max_attempts = 3, delay = "50ms", retry_on = [StoreError::Unavailable])]
    async fn get(&self, key: &str) -> Result<String, StoreError> {
        if self.outages.load(Ordering::SeqCst) > 0 {
            self.outages.fetch_sub(1, Ordering::SeqCst);
            return Err(StoreError::Unavailable);
        }
        Ok(format!("value of {key}"))
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    fn get_blocking(&self, key: String) -> Result<String, StoreError> {
        Ok(key)
    }
}

async fn read(store: &impl Store) -> Result<String, StoreError> {
    store.get("k").await
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let store = Flaky {
        outages: AtomicU32::new(2),
    };
    assert_eq!(read(&store).await, Ok("value of k".to_owned()));
    store.outages.store(5, Ordering::SeqCst);
    assert_eq!(read(&store).await, Err(StoreError::Unavailable));
    assert_eq!(store.get_blocking("b".to_owned()), Ok("b".to_owned()));
}
