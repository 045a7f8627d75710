use reattempt::retryable;

#[retryable(delay = "3s", max_delay = "2s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
