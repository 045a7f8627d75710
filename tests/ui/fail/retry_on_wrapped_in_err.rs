use reattempt::retryable;

#[derive(Debug)]
enum PayError {
    Unavailable,
}

#[retryable(retry_on = [Err(PayError::Unavailable)])]
async fn charge() -> Result<u32, PayError> {
    Err(PayError::Unavailable)
}

fn main() {}
