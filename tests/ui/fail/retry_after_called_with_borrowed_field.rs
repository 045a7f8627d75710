use reattempt::retryable;

#[retryable(retry_after = hint_of(&reply.headers))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
