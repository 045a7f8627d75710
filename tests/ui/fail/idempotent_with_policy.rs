use reattempt::{RetryPolicy, retryable};

static POLICY: RetryPolicy = match RetryPolicy::builder().build() {
    Ok(p) => p,
    Err(_) => panic!(),
};

#[retryable(policy = &POLICY, idempotent = true)]
async fn read() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
