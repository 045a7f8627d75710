use reattempt::retryable;

#[retryable(policy = DEFAULT)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
