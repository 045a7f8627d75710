use reattempt::retryable;

#[retryable(retry_if_ok = |v: &String| v.is_empty())]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
