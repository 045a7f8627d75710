use reattempt::retryable;

#[retryable(jitter_type = "full")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
