use reattempt::retryable;

#[retryable(max_attempts = 2, hedge_after = "p100", idempotent = true)]
async fn fetch() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
