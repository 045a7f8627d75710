use reattempt::retryable;

#[retryable(errorFilter = is_client_error)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
