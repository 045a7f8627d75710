use reattempt::retryable;

mod tonic {
    #[derive(Debug)]
    pub struct Status;
    pub enum Code {
        Unavailable,
    }
}

use tonic::Code;

#[retryable(retry_on = [Code::Unavailable])]
async fn call() -> Result<u32, tonic::Status> {
    Ok(1)
}

fn main() {}
