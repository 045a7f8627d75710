// A hook called instead of named, and a conversion too: one error each, at each call.
use std::time::Duration;

use reattempt::{RetryContext, retryable};

fn log_retry(_: &String, _: &RetryContext, _: Duration) {}

#[retryable(on_retry = log_retry(), timeout = "1s", timeout_into = String::new())]
async fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
