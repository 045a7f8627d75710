//! Return types and bodies: aliases, `macro_rules!` fragments, `?`, inner attributes, early
//! returns, `async move` blocks in the body.

use std::io;

use reattempt::retryable;

use crate::{Fail, assert_send, first_try};

#[derive(Debug, PartialEq)]
pub struct ApiError(u16);

impl From<Fail> for ApiError {
    fn from(_: Fail) -> Self {
        ApiError(503)
    }
}

type ApiResult<T> = Result<T, ApiError>;

// S34: `io::Result<T>`.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn io_alias(n: u32) -> io::Result<u32> {
    if first_try() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    Ok(n)
}

// S35: a crate's own alias under another name.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn other_alias(n: u16) -> ApiResult<u16> {
    if first_try() {
        return Err(ApiError(500));
    }
    Ok(n)
}

// S36: `std::result::Result`, fully qualified, `Ok` type `()`.
#[retryable(max_attempts = 3, delay = "1ms")]
fn qualified() -> ::std::result::Result<(), Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(())
}

macro_rules! client_fn {
    ($name:ident, $arg:ty, $ret:ty) => {
        // S37, S38: argument and return types from `macro_rules!` `ty` fragments.
        #[retryable(max_attempts = 3, delay = "1ms")]
        async fn $name(log: $arg) -> $ret {
            log.push(1);
            if first_try() {
                return Err(Fail);
            }
            Ok(log.len())
        }
    };
}

client_fn!(from_macro, &mut Vec<u8>, Result<usize, Fail>);

// S39: `?` converting the error.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn question_mark(n: u16) -> Result<u16, ApiError> {
    let fallible = || if first_try() { Err(Fail) } else { Ok(n) };
    Ok(fallible()?)
}

// S40: inner attributes in the body.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn inner_attributes(n: u32) -> Result<u32, Fail> {
    #![allow(clippy::let_and_return)]
    let out = if first_try() { Err(Fail) } else { Ok(n) };
    out
}

// S41: an `async move` block and an early `return Ok` in the body.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn async_block(name: String) -> Result<usize, Fail> {
    let len = async move { name.len() }.await;
    if len == 0 {
        return Ok(0);
    }
    if first_try() {
        return Err(Fail);
    }
    Ok(len)
}

// S42: a body with loops, labels and `break` values.
#[retryable(max_attempts = 3, delay = "1ms")]
fn loops(limit: u32) -> Result<u32, Fail> {
    let mut i = 0;
    let found = 'outer: loop {
        i += 1;
        if i >= limit {
            break 'outer i;
        }
    };
    if first_try() {
        return Err(Fail);
    }
    Ok(found)
}

// S43: a one-expression body.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn one_expression() -> Result<u8, Fail> {
    if first_try() { Err(Fail) } else { Ok(1) }
}

#[tokio::test(start_paused = true)]
async fn returns() {
    assert_eq!(assert_send(io_alias(3)).await.ok(), Some(3));
    assert_eq!(assert_send(other_alias(4)).await, Ok(4));
    assert_eq!(qualified(), Ok(()));
    let mut log = Vec::new();
    assert_eq!(assert_send(from_macro(&mut log)).await, Ok(2));
    assert_eq!(assert_send(question_mark(5)).await, Ok(5));
    assert_eq!(assert_send(inner_attributes(6)).await, Ok(6));
    assert_eq!(assert_send(async_block("abc".to_owned())).await, Ok(3));
    assert_eq!(loops(4), Ok(4));
    assert_eq!(assert_send(one_expression()).await, Ok(1));
}
