#![deny(warnings, clippy::pedantic)]
//! `retry_if` with `reattempt::transient` (io errors and an own `Transient`), with a closure, with
//! a path, and together with `retry_on` / `no_retry_on`.

use std::cell::Cell;
use std::io;

use reattempt::{Transient, retryable};

#[derive(Debug, PartialEq)]
enum DbError {
    Locked,
    Corrupt,
    Busy,
}

impl Transient for DbError {
    fn is_transient(&self) -> bool {
        matches!(self, DbError::Locked)
    }
}

fn is_busy(e: &DbError) -> bool {
    *e == DbError::Busy
}

#[retryable(max_attempts = 3, delay = "10ms", retry_if = reattempt::transient, idempotent = true)]
async fn read(calls: &Cell<u32>, kind: io::ErrorKind) -> io::Result<()> {
    calls.set(calls.get() + 1);
    Err(kind.into())
}

#[retryable(max_attempts = 3, delay = "1ms", retry_if = reattempt::transient)]
fn query(calls: &Cell<u32>, err: fn() -> DbError) -> Result<(), DbError> {
    calls.set(calls.get() + 1);
    Err(err())
}

#[retryable(max_attempts = 3, delay = "1ms", retry_if = |e| *e == DbError::Corrupt)]
fn closure(calls: &Cell<u32>) -> Result<(), DbError> {
    calls.set(calls.get() + 1);
    Err(DbError::Corrupt)
}

#[retryable(max_attempts = 3, delay = "1ms", retry_if = |e: &DbError| e.is_transient())]
fn typed_closure(calls: &Cell<u32>) -> Result<(), DbError> {
    calls.set(calls.get() + 1);
    Err(DbError::Locked)
}

#[retryable(
    max_attempts = 3,
    delay = "1ms",
    retry_on = [DbError::Locked],
    retry_if = is_busy,
    no_retry_on = [DbError::Corrupt]
)]
fn combined(calls: &Cell<u32>, err: fn() -> DbError) -> Result<(), DbError> {
    calls.set(calls.get() + 1);
    Err(err())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let calls = Cell::new(0);
    assert!(read(&calls, io::ErrorKind::ConnectionReset).await.is_err());
    assert_eq!(calls.replace(0), 3);
    assert!(read(&calls, io::ErrorKind::NotFound).await.is_err());
    assert_eq!(calls.replace(0), 1);

    assert_eq!(query(&calls, || DbError::Locked), Err(DbError::Locked));
    assert_eq!(calls.replace(0), 3);
    assert_eq!(query(&calls, || DbError::Corrupt), Err(DbError::Corrupt));
    assert_eq!(calls.replace(0), 1);

    assert_eq!(closure(&calls), Err(DbError::Corrupt));
    assert_eq!(calls.replace(0), 3);
    assert_eq!(typed_closure(&calls), Err(DbError::Locked));
    assert_eq!(calls.replace(0), 3);

    assert_eq!(combined(&calls, || DbError::Busy), Err(DbError::Busy));
    assert_eq!(calls.replace(0), 3);
    assert_eq!(combined(&calls, || DbError::Locked), Err(DbError::Locked));
    assert_eq!(calls.replace(0), 3);
    assert_eq!(combined(&calls, || DbError::Corrupt), Err(DbError::Corrupt));
    assert_eq!(calls.replace(0), 1);
}
