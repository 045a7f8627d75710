use reattempt::retryable;

#[retryable(max_interval = "10s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
