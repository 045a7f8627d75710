//! Review (issue 11, README "keeping its ... `Send`-ness"): a receiver taken by value
//! (`self`, `self: Box<Self>`) that is `Send` but not `Sync`. The plain method's future is
//! `Send`; the expansion binds `let __self = &self;` and holds that `&Self` across awaits,
//! which needs `Self: Sync`. S44 checks the same for a by-value argument, not for `self`.
#![allow(missing_docs)]
use std::cell::Cell;

use reattempt::retryable;

#[derive(Debug, PartialEq)]
pub struct Fail;

fn assert_send<T: Send>(t: T) -> T {
    t
}

pub struct Counter {
    c: Cell<u32>,
}

impl Counter {
    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn run(self) -> Result<u32, Fail> {
        self.c.set(self.c.get() + 1);
        tokio::task::yield_now().await;
        Ok(self.c.get())
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn boxed(self: Box<Self>) -> Result<u32, Fail> {
        tokio::task::yield_now().await;
        Ok(self.c.get())
    }
}

#[tokio::test(start_paused = true)]
async fn by_value_receivers_keep_send() {
    let c = Counter { c: Cell::new(0) };
    assert_eq!(assert_send(c.run()).await, Ok(1));
    let c = Box::new(Counter { c: Cell::new(5) });
    assert_eq!(assert_send(c.boxed()).await, Ok(5));
}

#[test]
fn spawned_on_a_multi_thread_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let out = rt.block_on(async { tokio::spawn(Counter { c: Cell::new(1) }.run()).await });
    assert_eq!(out.ok(), Some(Ok(2)));
}
