// tenacity's stop_never.
use reattempt::retryable;

#[retryable(stop_never = true)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
