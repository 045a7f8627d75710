use reattempt::retryable;

#[retryable(retryCondition = is_retryable)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
