// The policy key given a file.
use reattempt::retryable;

#[retryable(policy = "conf/retry.yaml")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
