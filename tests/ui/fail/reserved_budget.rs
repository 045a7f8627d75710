use reattempt::retryable;

#[retryable(budget = 0.1)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
