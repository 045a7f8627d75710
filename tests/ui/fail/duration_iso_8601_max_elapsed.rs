use reattempt::retryable;

#[retryable(max_elapsed = "PT1M30S")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
