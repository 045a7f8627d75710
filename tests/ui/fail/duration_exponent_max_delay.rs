use reattempt::retryable;

#[retryable(max_delay = 1e3)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
