//! Hostile review (issue 15): `#[retryable(policy = …)]` on an `async fn` whose attempts may
//! overlap is now expanded through the closure driver.
//!
//! FAILS TO COMPILE (review2 finding 4): gated so that the facade's other tests build; run with
//! `RUSTFLAGS="--cfg review2_failing" cargo test --test review2_policy_send`. Before, its future was `Send` whenever its
//! arguments were; a by-value argument that is `Send + Clone` but not `Sync` (a `Cell`, a
//! `RefCell`, an `mpsc::Receiver`-holding struct) must keep it `Send` (`tokio::spawn`).

#![allow(unexpected_cfgs)]
#![cfg(review2_failing)]

use std::cell::Cell;
use std::io;
use std::sync::LazyLock;

use reattempt::{RetryPolicy, retryable};

static POLICY: LazyLock<RetryPolicy> =
    LazyLock::new(|| RetryPolicy::builder().max_attempts(2).build().unwrap());

#[retryable(policy = POLICY)]
async fn read_cell(c: Cell<u32>) -> io::Result<u32> {
    Ok(c.get())
}

/// The same function with the policy's keys inline: its future is `Send`.
#[retryable(max_attempts = 2)]
async fn read_cell_inline(c: Cell<u32>) -> io::Result<u32> {
    Ok(c.get())
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test]
async fn a_policy_fn_with_a_send_but_not_sync_argument_is_send() {
    let inline = tokio::spawn(assert_send(read_cell_inline(Cell::new(3))));
    assert_eq!(inline.await.unwrap().unwrap(), 3);
    let by_policy = tokio::spawn(assert_send(read_cell(Cell::new(4))));
    assert_eq!(by_policy.await.unwrap().unwrap(), 4);
}
