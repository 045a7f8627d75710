#![deny(warnings, clippy::pedantic)]
//! The facade under another name: `crate = "..."` on both attributes.

extern crate reattempt as renamed_reattempt;

use renamed_reattempt::{recover, retryable};

#[derive(Debug, PartialEq)]
struct Down;

impl From<renamed_reattempt::Elapsed> for Down {
    fn from(_: renamed_reattempt::Elapsed) -> Self {
        Down
    }
}

#[retryable(crate = "renamed_reattempt", max_attempts = 2, delay = "10ms", timeout = "1s", recover = fallback)]
async fn fetch(id: u32) -> Result<u32, Down> {
    if id == 0 { Err(Down) } else { Ok(id) }
}

#[recover(crate = "renamed_reattempt")]
async fn fallback(_err: Down, id: u32) -> Result<u32, Down> {
    Ok(id + 100)
}

mod nested {
    #[super::retryable(crate = "::renamed_reattempt", max_attempts = 2, delay = "1ms")]
    pub fn get() -> Result<u8, String> {
        Ok(1)
    }

    #[super::retryable(crate = "crate::renamed_reattempt", max_attempts = 2, delay = "1ms")]
    pub fn get_relative() -> Result<u8, String> {
        Ok(2)
    }

    pub static BUDGET: std::sync::LazyLock<crate::renamed_reattempt::RetryBudget> =
        std::sync::LazyLock::new(|| crate::renamed_reattempt::RetryBudget::builder().build().unwrap());

    // The error is asked whether it timed out (a budget is named), and `log_error` is set.
    #[super::retryable(crate = "crate::renamed_reattempt", max_attempts = 2, delay = "1ms",
                       budget = BUDGET, log_error = "none")]
    pub fn read() -> std::io::Result<u8> {
        Ok(3)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(fetch(1).await, Ok(1));
    assert_eq!(fetch(0).await, Ok(100));
    assert_eq!(nested::get(), Ok(1));
    assert_eq!(nested::get_relative(), Ok(2));
    assert_eq!(nested::read().unwrap(), 3);
}
