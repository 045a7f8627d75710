use reattempt::retryable;

#[retryable(initial_delay = "200ms")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
