use reattempt::retryable;

#[retryable(stop = stop_after_attempt(3))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
