use reattempt::retryable;

#[retryable(max_attempts = 2, hedge_after = "50ms", idempotent = true)]
fn fetch() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
