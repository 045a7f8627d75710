use reattempt::retryable;

#[retryable(volumeThreshold = 10)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
