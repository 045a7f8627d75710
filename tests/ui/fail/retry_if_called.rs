// The predicate called instead of named.
use reattempt::retryable;

#[retryable(max_attempts = 3, retry_if = reattempt::transient())]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
