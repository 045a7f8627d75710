use reattempt::retryable;

#[retryable(WithJitterFactor = 0.25)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
