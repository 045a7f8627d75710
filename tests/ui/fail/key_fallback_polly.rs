use reattempt::retryable;

#[retryable(fallback = cached)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
