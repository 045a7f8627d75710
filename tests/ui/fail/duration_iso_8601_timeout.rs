use reattempt::retryable;

#[retryable(timeout = "PT2S")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
