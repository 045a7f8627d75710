use reattempt::retryable;

#[retryable(retry_if = is_transient(&E))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
