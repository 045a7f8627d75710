//! Review 3 scratch: a policy argument by value, with recover.

use reattempt::{RetryPolicy, recover, retryable};

#[recover]
fn fallback(_: String, _policy: &RetryPolicy) -> Result<u32, String> {
    Ok(0)
}

#[retryable(policy = policy, recover = fallback)]
fn with_policy_ref(policy: &RetryPolicy) -> Result<u32, String> {
    Err("x".into())
}

#[test]
fn run() {
    let p = RetryPolicy::builder()
        .max_attempts(2)
        .build()
        .expect("policy");
    assert_eq!(with_policy_ref(&p), Ok(0));
}
