use reattempt::retryable;

// `Display` is not offered: it can carry a secret as `Debug` does.
#[retryable(log_error = "display")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

#[retryable(log_error = "Debug")]
fn fetch_cased() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
    let _ = fetch_cased();
}
