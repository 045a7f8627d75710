use reattempt::retryable;

#[retryable(retries = 2)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
