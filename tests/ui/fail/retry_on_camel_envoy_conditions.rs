use reattempt::retryable;

#[retryable(retryOn = "refused-stream,reset")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
