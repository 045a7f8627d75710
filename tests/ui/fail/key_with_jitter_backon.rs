use reattempt::retryable;

#[retryable(with_jitter)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
