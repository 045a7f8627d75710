//! Other attribute macros stacked above and below `#[retryable]`, and attributes kept.

use reattempt::retryable;
use tracing::instrument;

use crate::{Fail, assert_send, first_try};

#[derive(Debug, Default)]
pub struct Service {
    calls: u32,
}

impl Service {
    // S55: `#[tracing::instrument]` above, on a `&mut self` method.
    #[instrument(level = "debug")]
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn instrument_above(&mut self, id: u32) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(id + self.calls)
    }

    // S56: `#[tracing::instrument]` below, on a `&mut self` method.
    #[retryable(max_attempts = 3, delay = "1ms")]
    #[instrument(level = "debug", skip(self))]
    async fn instrument_below(&mut self, id: u32) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(id + self.calls)
    }

    // S57: `#[tracing::instrument(err)]` above a blocking method.
    #[instrument(err)]
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn instrument_blocking(&mut self) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.calls)
    }
}

// S58: `#[instrument]` above a free fn with a `&mut` argument.
#[instrument]
#[retryable(max_attempts = 3, delay = "1ms")]
async fn instrument_free(log: &mut Vec<u8>) -> Result<usize, Fail> {
    log.push(1);
    if first_try() {
        return Err(Fail);
    }
    Ok(log.len())
}

/// S59: doc comments, `#[must_use]`, `#[inline]`, `#[cfg_attr]` and a visibility are kept.
#[must_use = "the result says whether it worked"]
#[inline]
#[cfg_attr(all(), allow(clippy::unused_async))]
#[retryable(max_attempts = 3, delay = "1ms")]
pub(crate) async fn kept_attributes(n: u32) -> Result<u32, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn attribute_stacks() {
    let mut s = Service::default();
    assert_eq!(assert_send(s.instrument_above(10)).await, Ok(12));
    assert_eq!(assert_send(s.instrument_below(10)).await, Ok(14));
    assert_eq!(s.instrument_blocking(), Ok(6));
    let mut log = Vec::new();
    assert_eq!(assert_send(instrument_free(&mut log)).await, Ok(2));
    assert_eq!(assert_send(kept_attributes(3)).await, Ok(3));
}

#[async_trait::async_trait]
trait Store {
    async fn load(&mut self, key: String) -> Result<u32, Fail>;
    async fn peek(&self, key: &str) -> Result<usize, Fail>;
}

#[async_trait::async_trait]
impl Store for Service {
    // S62: an `#[async_trait]` impl, `&mut self` and a by-value argument.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn load(&mut self, key: String) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.calls + u32::try_from(key.len()).unwrap_or(0))
    }

    // S63: an `#[async_trait]` impl with `#[instrument]` above `#[retryable]`.
    #[instrument(skip(self))]
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn peek(&self, key: &str) -> Result<usize, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(key.len() + usize::try_from(self.calls).unwrap_or(0))
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_impls() {
    let mut s = Service::default();
    assert_eq!(assert_send(s.load("ab".to_owned())).await, Ok(4));
    assert_eq!(assert_send(s.peek("abc")).await, Ok(5));
}
