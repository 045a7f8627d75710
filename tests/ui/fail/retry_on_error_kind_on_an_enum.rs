use std::io;

use reattempt::retryable;

#[derive(Debug)]
enum AppError {
    Io(io::Error),
}

#[retryable(retry_on = [io::ErrorKind::TimedOut])]
async fn read() -> Result<u32, AppError> {
    Err(AppError::Io(io::ErrorKind::TimedOut.into()))
}

fn main() {}
