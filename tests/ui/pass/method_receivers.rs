#![deny(warnings, clippy::pedantic)]
//! Inherent methods taking `self`, `&self` and `&mut self`, async and blocking.

use reattempt::retryable;

#[derive(Debug, PartialEq)]
struct Busy;

#[derive(Clone)]
struct Client {
    failures: u32,
    name: String,
}

impl Client {
    #[retryable(max_attempts = 3, delay = "10ms")]
    async fn by_value(self) -> Result<usize, Busy> {
        if self.failures > 5 {
            return Err(Busy);
        }
        Ok(self.name.len())
    }

    #[retryable(max_attempts = 3, delay = "10ms")]
    async fn by_ref(&self, suffix: &str) -> Result<String, Busy> {
        Ok(format!("{}{suffix}", self.name))
    }

    #[retryable(max_attempts = 3, delay = "10ms")]
    async fn by_mut(&mut self) -> Result<u32, Busy> {
        if self.failures > 0 {
            self.failures -= 1;
            return Err(Busy);
        }
        Ok(self.failures)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn blocking_mut(&mut self, step: u32) -> Result<u32, Busy> {
        if self.failures > 0 {
            self.failures -= step;
            return Err(Busy);
        }
        Ok(self.failures)
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    fn blocking_by_value(self) -> Result<String, Busy> {
        Ok(self.name.clone())
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut client = Client {
        failures: 2,
        name: "api".to_owned(),
    };
    assert_eq!(client.clone().by_value().await, Ok(3));
    assert_eq!(client.by_ref("/v1").await, Ok("api/v1".to_owned()));
    assert_eq!(client.by_mut().await, Ok(0));
    client.failures = 1;
    assert_eq!(client.blocking_mut(1), Ok(0));
    assert_eq!(client.blocking_by_value(), Ok("api".to_owned()));
}
