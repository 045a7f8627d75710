use reattempt::retryable;

#[retryable(min_delay = Duration::from_millis(50))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
