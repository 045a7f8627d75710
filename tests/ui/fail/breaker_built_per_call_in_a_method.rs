use std::sync::Arc;

use reattempt::{CircuitBreaker, retryable};

struct Client;

impl Client {
    #[retryable(max_attempts = 3, circuit_breaker = Arc::new(CircuitBreaker::builder().build().unwrap()))]
    async fn fetch(&self) -> Result<u32, std::io::Error> {
        Ok(1)
    }
}

fn main() {}
