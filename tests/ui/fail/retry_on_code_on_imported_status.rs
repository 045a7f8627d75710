use reattempt::retryable;

mod grpc {
    #[derive(Debug)]
    pub struct Status;
    pub enum Code {
        Unavailable,
    }
}

use grpc::{Code, Status};

#[retryable(retry_on = [Code::Unavailable])]
async fn call() -> Result<u32, Status> {
    Ok(1)
}

fn main() {}
