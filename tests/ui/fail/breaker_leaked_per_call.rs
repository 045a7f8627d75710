use reattempt::{CircuitBreaker, retryable};

// "It needs a `&'static`": a breaker leaked on every call, which never sees a second one.
#[retryable(circuit_breaker = Box::leak(Box::new(CircuitBreaker::builder().build().unwrap())))]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
