// gRPC's service-config name (gRFC A6) for the first delay.
use reattempt::retryable;

#[retryable(initial_backoff = "100ms")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
