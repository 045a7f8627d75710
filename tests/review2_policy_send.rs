//! Hostile review (issue 15, finding 4): `#[retryable(policy = …)]` on an `async fn` is expanded
//! through the closure driver (which hedges when the policy says so) only when the function has
//! no by-value argument: the driver's closure borrows what it clones for each attempt, and a
//! by-value argument that is `Send + Clone` but not `Sync` (a `Cell`, a `RefCell`) would make the
//! future not `Send`. Such a function keeps the attribute's own loop (and logs one WARN if its
//! policy hedges), so its future is `Send` whenever its arguments are (`tokio::spawn`).

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
