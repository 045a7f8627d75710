use reattempt::retryable;

#[retryable(halfOpenAfter = 10000)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
