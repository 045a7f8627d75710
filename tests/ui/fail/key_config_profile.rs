// A profile to read, as Spring's configuration would.
use reattempt::retryable;

#[retryable(profile = "payments")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
