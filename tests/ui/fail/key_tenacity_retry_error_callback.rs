// tenacity's callback for the final failure.
use reattempt::retryable;

#[retryable(retry_error_callback = give_up)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
