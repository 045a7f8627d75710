use reattempt::retryable;

#[retryable(reraise = true)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
