use reattempt::{CircuitBreaker, retryable};

#[retryable(circuit_breaker = &CircuitBreaker::builder().failure_threshold(5).build().unwrap())]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
