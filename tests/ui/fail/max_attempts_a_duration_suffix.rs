use reattempt::retryable;

#[retryable(max_attempts = 500ms)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
