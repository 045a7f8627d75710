use reattempt::retryable;

#[retryable(retry_on = "UNAVAILABLE,DEADLINE_EXCEEDED")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
