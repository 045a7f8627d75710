// gRPC's service-config retryThrottling (gRFC A6).
use reattempt::retryable;

#[retryable(maxTokens = 10)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
