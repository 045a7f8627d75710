use reattempt::retryable;

#[retryable(crate = "not a path!")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
