// A config file named in the attribute.
use reattempt::retryable;

#[retryable(config = "retry.toml")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
