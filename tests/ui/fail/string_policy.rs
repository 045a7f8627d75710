use std::sync::LazyLock;

use reattempt::{RetryPolicy, retryable};

static POLICY: LazyLock<RetryPolicy> = LazyLock::new(|| RetryPolicy::builder().build().expect("valid"));

#[retryable(policy = "POLICY")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
    let _ = &*POLICY;
}
