//! Issue 25, finding 13: a `Copy` type's `self` taken by value and used as a value.

use reattempt::retryable;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id(u32);

fn lookup(id: Id) -> u32 {
    id.0 * 10
}

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

impl Id {
    // `match self`: the pattern binds a `u32`, not a `&mut u32`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn number(self) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        match self {
            Id(n) => Ok(n),
        }
    }

    // `self` passed on by value.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn lookup(self) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(lookup(self))
    }

    // `mut self`: each attempt starts from the caller's value, as a `Copy` argument does.
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn bumped(mut self) -> Result<Id, Fail> {
        self.0 += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(self)
    }
}

#[derive(Debug, Default)]
pub struct NotCopy(u32);

impl NotCopy {
    // Not `Copy`: borrowed by each attempt as before (state kept across attempts).
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn count(mut self) -> Result<u32, Fail> {
        self.0 += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.0)
    }
}

#[tokio::test(start_paused = true)]
async fn copy_receivers_are_copied() {
    assert_eq!(Id(4).number(), Ok(4));
    assert_eq!(Id(5).lookup().await, Ok(50));
    assert_eq!(Id(1).bumped(), Ok(Id(2)));
    assert_eq!(NotCopy::default().count(), Ok(2));
}
