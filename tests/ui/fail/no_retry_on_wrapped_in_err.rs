use reattempt::retryable;

#[derive(Debug)]
enum PayError {
    Declined,
}

#[retryable(no_retry_on = [Err(PayError::Declined)])]
async fn charge() -> Result<u32, PayError> {
    Err(PayError::Declined)
}

fn main() {}
