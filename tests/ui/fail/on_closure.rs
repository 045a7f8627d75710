// The attribute on a closure: rustc refuses an attribute on an expression (E0658), and the
// macro says what to use instead.
use reattempt::retryable;

async fn call() -> Result<u32, std::io::Error> {
    Ok(1)
}

async fn run() {
    let fetch = #[retryable(max_attempts = 3)]
    || async { call().await };
    let _ = fetch().await;
}

fn main() {
    let _ = run();
}
