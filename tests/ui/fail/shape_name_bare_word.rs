use reattempt::retryable;

#[retryable(name = charge)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
