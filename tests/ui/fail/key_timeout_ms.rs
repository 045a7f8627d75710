use reattempt::retryable;

#[retryable(timeout_ms = 500)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
