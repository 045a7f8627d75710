// A blocking fn's attempts are never cut, even with a policy that has a `timeout`: its
// `timeout_into` would be dead.
use reattempt::{RetryPolicy, retryable};

static POLICY: RetryPolicy = match RetryPolicy::builder().build() {
    Ok(p) => p,
    Err(_) => panic!(),
};

#[retryable(policy = POLICY, timeout_into = |_| 504)]
fn fetch() -> Result<u32, u16> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
