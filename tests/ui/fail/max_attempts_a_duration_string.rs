use reattempt::retryable;

#[retryable(max_attempts = "5s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
