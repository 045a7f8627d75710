use reattempt::retryable;

#[retryable(retry_on = "5xx,reset,connect-failure")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
