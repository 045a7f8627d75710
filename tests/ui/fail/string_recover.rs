use reattempt::retryable;

#[retryable(recover = "fallback")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
