// A config file's preset, written in the attribute.
use reattempt::retryable;

#[retryable(preset = "aws-2026")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
