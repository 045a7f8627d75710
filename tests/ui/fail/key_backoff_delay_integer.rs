use reattempt::retryable;

#[retryable(backoff_delay = 200)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
