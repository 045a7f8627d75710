// A key quoted, as JSON or YAML writes it.
use reattempt::retryable;

#[retryable("max_attempts" = 3)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
