//! Arguments: `mut` bindings, references, patterns, ignored and underscore names, lint attributes.

use std::sync::{Arc, Mutex};

use reattempt::retryable;

use crate::{Fail, assert_send, first_try};

// S24: a `mut` by-value argument: each attempt starts from the caller's value.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn mut_owned(mut n: u32) -> Result<u32, Fail> {
    n += 1;
    if first_try() {
        return Err(Fail);
    }
    Ok(n)
}

// S25: `mut input: &[u8]` re-sliced in the body: each attempt starts from the whole slice.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn mut_slice(mut input: &[u8]) -> Result<usize, Fail> {
    input = &input[1..];
    if first_try() {
        return Err(Fail);
    }
    Ok(input.len())
}

// S26: `&mut` argument moved into an `async move` block inside the body.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn unique_into_async_move(log: &mut Vec<u32>) -> Result<usize, Fail> {
    let len = async move {
        log.push(1);
        log.len()
    }
    .await;
    if first_try() {
        return Err(Fail);
    }
    Ok(len)
}

// S27: a `mut` binding of a `&mut` argument, re-sliced in the body: each attempt starts from
// the caller's whole slice.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn mut_unique(mut slots: &mut [u32]) -> Result<usize, Fail> {
    slots[0] += 1;
    slots = &mut std::mem::take(&mut slots)[1..];
    if first_try() {
        return Err(Fail);
    }
    Ok(slots.len())
}

#[derive(Debug, Clone, Copy)]
struct Point {
    x: i32,
    y: i32,
}

// S28: tuple and struct patterns.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn patterns((a, b): (u32, u32), Point { x, y }: Point) -> Result<i64, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(i64::from(a + b) + i64::from(x * y))
}

// S29: a reference pattern, and a `mut` binding inside a pattern.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn ref_pattern(&(a, b): &(u8, u8), (mut c, d): (u8, u8)) -> Result<u8, Fail> {
    c += d;
    if first_try() {
        return Err(Fail);
    }
    Ok(a + b + c)
}

// S30: `_: T` and `_name: T` arguments (unused, with no lint in the expansion).
#[retryable(max_attempts = 3, delay = "1ms")]
async fn ignored(_: String, _unused: String, n: u32) -> Result<u32, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(n)
}

// S31: an `#[allow]` on an argument is kept (it is never read).
#[retryable(max_attempts = 3, delay = "1ms")]
async fn allowed(#[allow(unused_variables)] trace_id: String, n: u32) -> Result<u32, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(n)
}

// S32: many arguments of every kind.
#[retryable(max_attempts = 3, delay = "1ms")]
#[allow(clippy::too_many_arguments)]
async fn many(
    a: u8,
    b: &str,
    c: String,
    d: &mut Vec<u8>,
    e: Option<u16>,
    (f, g): (u8, u8),
    h: Arc<Mutex<u32>>,
) -> Result<usize, Fail> {
    d.push(a);
    *h.lock().map_err(|_| Fail)? += 1;
    if first_try() {
        return Err(Fail);
    }
    Ok(b.len() + c.len() + d.len() + usize::from(e.unwrap_or(0)) + usize::from(f + g))
}

// S33: an argument used only by reference, and a blocking `mut` argument.
#[retryable(max_attempts = 3, delay = "1ms")]
fn blocking_mut(mut acc: Vec<u8>, item: u8) -> Result<Vec<u8>, Fail> {
    acc.push(item);
    if first_try() {
        return Err(Fail);
    }
    Ok(acc)
}

#[tokio::test(start_paused = true)]
async fn arguments() {
    assert_eq!(assert_send(mut_owned(1)).await, Ok(2));
    let bytes = [1u8, 2, 3];
    assert_eq!(assert_send(mut_slice(&bytes)).await, Ok(2));
    let mut log = Vec::new();
    assert_eq!(assert_send(unique_into_async_move(&mut log)).await, Ok(2));
    let mut slots = [0, 0, 0];
    assert_eq!(assert_send(mut_unique(&mut slots)).await, Ok(2));
    // Both attempts wrote the caller's first slot, not the first attempt's re-sliced view.
    assert_eq!(slots, [2, 0, 0]);
    assert_eq!(
        assert_send(patterns((1, 2), Point { x: 2, y: 3 })).await,
        Ok(9)
    );
    assert_eq!(assert_send(ref_pattern(&(1, 2), (3, 4))).await, Ok(10));
    assert_eq!(
        assert_send(ignored(String::new(), String::new(), 5)).await,
        Ok(5)
    );
    assert_eq!(assert_send(allowed(String::new(), 6)).await, Ok(6));
    let mut d = Vec::new();
    let h = Arc::new(Mutex::new(0));
    assert_eq!(
        assert_send(many(
            1,
            "bb",
            "ccc".to_owned(),
            &mut d,
            Some(4),
            (5, 6),
            h.clone()
        ))
        .await,
        Ok(2 + 3 + 2 + 4 + 11)
    );
    assert_eq!(*h.lock().unwrap(), 2);
    assert_eq!(blocking_mut(vec![0], 9), Ok(vec![0, 9]));
}

// S72: `#[cfg]` on arguments: the configured-out one is bound by nothing.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn cfg_arg(a: u32, #[cfg(any())] b: u32, #[cfg(test)] c: String) -> Result<usize, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(a as usize + c.len())
}

#[derive(Debug, PartialEq)]
pub enum Guarded {
    Busy,
    Open,
}

impl From<reattempt::BreakerOpen> for Guarded {
    fn from(_: reattempt::BreakerOpen) -> Self {
        Guarded::Open
    }
}

// S73: an argument read only by the attribute (a breaker handed in per call): not copied into
// the attempts, so no `unused_variables`; and under a `_name` (which clippy's
// `used_underscore_binding` then reports at the attribute, as for any use of such a name).
#[retryable(max_attempts = 3, delay = "1ms", circuit_breaker = breaker)]
async fn per_call_breaker(
    breaker: Arc<reattempt::CircuitBreaker>,
    id: u32,
) -> Result<u32, Guarded> {
    if first_try() {
        return Err(Guarded::Busy);
    }
    Ok(id)
}

#[allow(clippy::used_underscore_binding)]
#[retryable(max_attempts = 3, delay = "1ms", circuit_breaker = _breaker)]
async fn per_call_breaker_underscore(
    _breaker: Arc<reattempt::CircuitBreaker>,
    id: u32,
) -> Result<u32, Guarded> {
    if first_try() {
        return Err(Guarded::Busy);
    }
    Ok(id)
}

pub struct Conn {
    breaker: reattempt::CircuitBreaker,
    sent: u32,
}

// S74: `circuit_breaker` read from a `&mut` argument the attempts reborrow: evaluated at each
// use, not held across attempts.
#[retryable(max_attempts = 3, delay = "1ms", circuit_breaker = conn.breaker)]
async fn send(conn: &mut Conn) -> Result<u32, Guarded> {
    conn.sent += 1;
    if first_try() {
        return Err(Guarded::Busy);
    }
    Ok(conn.sent)
}

#[tokio::test(start_paused = true)]
async fn cfg_and_attribute_arguments() {
    assert_eq!(assert_send(cfg_arg(1, "ab".to_owned())).await, Ok(3));
    let b = Arc::new(reattempt::CircuitBreaker::builder().build().expect("valid"));
    assert_eq!(assert_send(per_call_breaker(b.clone(), 3)).await, Ok(3));
    assert_eq!(assert_send(per_call_breaker_underscore(b, 4)).await, Ok(4));
    let mut conn = Conn {
        breaker: reattempt::CircuitBreaker::builder().build().expect("valid"),
        sent: 0,
    };
    assert_eq!(assert_send(send(&mut conn)).await, Ok(2));
}
