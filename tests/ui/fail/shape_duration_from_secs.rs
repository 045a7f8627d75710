use reattempt::retryable;

#[retryable(max_delay = Duration::from_secs(5))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
