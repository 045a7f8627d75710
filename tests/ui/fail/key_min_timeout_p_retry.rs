use reattempt::retryable;

#[retryable(minTimeout = 1000)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
