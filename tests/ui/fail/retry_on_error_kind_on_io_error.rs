use std::io::{self, ErrorKind};

use reattempt::retryable;

#[retryable(retry_on = [ErrorKind::TimedOut, ErrorKind::ConnectionReset])]
async fn read() -> Result<u32, io::Error> {
    Ok(1)
}

fn main() {}
