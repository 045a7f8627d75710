use std::future::Future;

use reattempt::retryable;

#[retryable(max_attempts = 3)]
fn fetch(id: u32) -> impl Future<Output = Result<u32, String>> {
    async move { Err(format!("{id} is down")) }
}

fn main() {
    drop(fetch(1));
}
