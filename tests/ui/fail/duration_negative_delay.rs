use reattempt::retryable;

#[retryable(delay = -100)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
