use std::time::Duration;

use reattempt::{RetryContext, retryable};

#[allow(dead_code)]
fn log_it(e: &String, _: &RetryContext, d: Duration) {
    println!("{e}, retrying in {d:?}");
}

#[allow(dead_code)]
fn hint(_: &String) -> Option<Duration> {
    None
}

#[retryable(on_retry = "log_it")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
