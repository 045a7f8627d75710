use reattempt::retryable;

#[retryable(retry_if = is_retryable(&status))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
