use reattempt::retryable;

#[retryable(retry_after = |_e: &String| 5_u64)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
