use reattempt::retryable;

#[retryable(timeout = 10s)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
