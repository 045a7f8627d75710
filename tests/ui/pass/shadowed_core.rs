#![deny(warnings, clippy::pedantic)]
//! The generated code names `::core`: local modules called `core` and `std` do not disturb it.

mod core {}
mod std {}

mod api {
    mod core {
        pub struct Duration;
    }
    mod std {}

    use ::std::time::Duration;

    #[derive(Debug, PartialEq)]
    pub enum Error {
        Busy,
        Timeout,
    }

    impl From<reattempt::Elapsed> for Error {
        fn from(_: reattempt::Elapsed) -> Self {
            Error::Timeout
        }
    }

    #[reattempt::retryable(max_attempts = 2, delay = "10ms", retry_on = [Error::Busy], timeout = "1s")]
    pub async fn fetch(id: u32) -> Result<u32, Error> {
        let _ = core::Duration;
        let _ = Duration::ZERO;
        Ok(id)
    }

    #[reattempt::retryable(max_attempts = 2, delay = "1ms", no_retry_on = [Error::Busy], recover = fallback)]
    pub fn get(id: u32) -> Result<u32, Error> {
        if id == 0 { Err(Error::Busy) } else { Ok(id) }
    }

    #[reattempt::recover]
    fn fallback(e: Error) -> Result<u32, Error> {
        if e == Error::Busy { Ok(0) } else { Err(e) }
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(api::fetch(1).await, Ok(1));
    assert_eq!(api::get(0), Ok(0));
}
