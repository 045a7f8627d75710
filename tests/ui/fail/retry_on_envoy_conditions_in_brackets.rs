use reattempt::retryable;

#[retryable(retry_on = ["gateway-error", "retriable-4xx"])]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
