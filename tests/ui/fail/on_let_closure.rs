// The attribute on the `let` that binds a closure.
use reattempt::retryable;

async fn call() -> Result<u32, std::io::Error> {
    Ok(1)
}

async fn run() {
    #[retryable(max_attempts = 3)]
    let fetch = || async { call().await };
    let _ = fetch().await;
}

fn main() {
    let _ = run();
}
