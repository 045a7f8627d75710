use reattempt::retryable;

// Resilience4j's Spring Boot property, `resilience4j.retry.instances.x.max-attempts`.
#[retryable(max-attempts = 3, delay = "100ms")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
