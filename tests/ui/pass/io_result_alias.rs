#![deny(warnings, clippy::pedantic)]
//! `io::Result<T>` and a crate's own `Result` alias.

use std::io;

use reattempt::retryable;

mod api {
    #[derive(Debug, PartialEq)]
    pub struct Error(pub u16);
    pub type Result<T> = std::result::Result<T, Error>;
}

#[retryable(max_attempts = 2, delay = "10ms", timeout = "1s")]
async fn read_config(path: &str) -> io::Result<String> {
    if path.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "empty path"));
    }
    Ok(path.to_uppercase())
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn status(code: u16) -> api::Result<u16> {
    if code >= 500 {
        Err(api::Error(code))
    } else {
        Ok(code)
    }
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn full_path() -> std::result::Result<(), std::fmt::Error> {
    Ok(())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(read_config("a").await.unwrap(), "A");
    assert_eq!(
        read_config("").await.unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(status(200), Ok(200));
    assert_eq!(status(503), Err(api::Error(503)));
    assert_eq!(full_path(), Ok(()));
}
