use reattempt::retryable;

#[retryable(backoff = "quadratic")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
