use reattempt::retryable;

#[retryable(name = fetch)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
