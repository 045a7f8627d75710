//! Review (issue 11): `self: Pin<&mut Self>` (not `mut`). It is classified as a by-value
//! receiver and bound `let __self = &self;` (a `&Pin<&mut Self>`), so `self.get_mut()` (or a
//! pin-projection, which also takes the `Pin` by value) cannot be called: E0507. Each attempt
//! could get `self.as_mut()` instead, as `&mut self` gets `&mut *self`.
#![allow(missing_docs)]
use std::pin::Pin;

use reattempt::retryable;

#[derive(Debug, PartialEq)]
pub struct Fail;

pub struct Pinned {
    n: u32,
}

impl Pinned {
    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn bump(self: Pin<&mut Self>) -> Result<u32, Fail> {
        let this = self.get_mut();
        this.n += 1;
        Ok(this.n)
    }
}

#[tokio::test(start_paused = true)]
async fn a_pinned_receiver() {
    let mut p = Pinned { n: 0 };
    assert_eq!(Pin::new(&mut p).bump().await, Ok(1));
}
