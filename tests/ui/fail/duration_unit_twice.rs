use reattempt::retryable;

// humantime adds the parts up (two minutes): a unit written twice is refused.
#[retryable(delay = "1m 1m")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
