use reattempt::retryable;

#[retryable(hedge_after = 50ms)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
