use reattempt::retryable;

#[retryable(timeout_ms = 18446744073709551615)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
