use reattempt::{AdaptiveThrottle, retryable};

#[retryable(throttle = &AdaptiveThrottle::builder().build().expect("valid"))]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
