use reattempt::retryable;

#[retryable(delay = 2.5ms)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
