use reattempt::retryable;

#[retryable(retry_on = [])]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
