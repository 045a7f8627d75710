// Resilience4j's Spring Boot property, written whole.
use reattempt::retryable;

#[retryable(resilience4j.retry.instances.backend.waitDuration = "500ms")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
