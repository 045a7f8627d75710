use reattempt::retryable;

#[retryable(take = 3)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
