use reattempt::retryable;

#[retryable(max_attempts = 2, timeout = "1s")]
fn fetch() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
