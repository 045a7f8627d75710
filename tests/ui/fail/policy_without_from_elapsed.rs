// A run-time policy may hold a timeout, so the error type needs a conversion: the error is at
// `policy`, and names `timeout_into`.
use reattempt::{RetryPolicy, retryable};

static POLICY: RetryPolicy = match RetryPolicy::builder().build() {
    Ok(p) => p,
    Err(_) => panic!(),
};

#[retryable(policy = POLICY)]
async fn parse(text: &str) -> Result<u32, std::num::ParseIntError> {
    text.parse()
}

fn main() {
    drop(parse("1"));
}
