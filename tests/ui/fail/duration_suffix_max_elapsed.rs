use reattempt::retryable;

#[retryable(max_elapsed = 2min)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
