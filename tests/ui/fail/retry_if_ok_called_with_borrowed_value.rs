use reattempt::retryable;

#[retryable(retry_if_ok = is_pending(&job))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
