// The predicate written as a call on the error it would be given, which is not in scope.
use reattempt::retryable;

fn is_transient(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::ConnectionReset
}

#[retryable(max_attempts = 3, retry_if = is_transient(&e))]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
