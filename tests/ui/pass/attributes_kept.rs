#![deny(warnings, clippy::pedantic)]
//! The function's own attributes and doc comments stay on it, and still apply to its body.

use reattempt::retryable;

/// Fetches a value.
///
/// The doc comment stays on the function.
#[must_use = "the fetched value is the point of the call"]
#[retryable(max_attempts = 2, delay = "1ms")]
#[allow(unused_variables)]
fn fetch(id: u32) -> Result<u32, String> {
    let unused = 0;
    Ok(id)
}

struct Client;

impl Client {
    /// An async method keeps its attributes.
    #[retryable(max_attempts = 2, delay = "10ms")]
    #[must_use]
    #[inline]
    #[cfg_attr(all(), allow(unused_variables))]
    async fn get(&self) -> Result<u32, String> {
        let unused = 0;
        Ok(1)
    }

    #[cfg(any())]
    #[retryable(max_attempts = 2)]
    fn never_compiled(&self) -> Result<u32, String> {
        compile_error!("cfg is applied");
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    #[deprecated = "use get"]
    fn old(&self) -> Result<u32, String> {
        Ok(0)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
#[allow(deprecated)]
async fn main() {
    assert_eq!(fetch(1), Ok(1));
    assert_eq!(Client.get().await, Ok(1));
    assert_eq!(Client.old(), Ok(0));
}
