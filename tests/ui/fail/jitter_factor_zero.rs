use reattempt::retryable;

#[retryable(jitter = 0.0)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
