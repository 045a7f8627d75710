use reattempt::retryable;

#[retryable(jitter = "ful")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
