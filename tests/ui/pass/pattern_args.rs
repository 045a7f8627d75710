#![deny(warnings, clippy::pedantic)]
//! Destructuring arguments, by value and by reference, and `_`.

use reattempt::retryable;

#[derive(Clone)]
struct Point {
    x: i32,
    y: i32,
}

#[retryable(max_attempts = 2, delay = "10ms")]
async fn sum((a, b): (u32, u32), Point { x, y }: Point, _: u8) -> Result<i64, String> {
    Ok(i64::from(a) + i64::from(b) + i64::from(x) + i64::from(y))
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn by_ref(
    &(a, b): &(u32, u32),
    [first, ..]: [u8; 3],
    (mut n, _): (u32, bool),
) -> Result<u32, String> {
    n += a + b + u32::from(first);
    Ok(n)
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn by_mut_ref((a, b): &mut (u32, u32)) -> Result<u32, String> {
    *a += 1;
    *b += 1;
    Ok(*a + *b)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(sum((1, 2), Point { x: 3, y: 4 }, 0).await, Ok(10));
    assert_eq!(by_ref(&(1, 2), [3, 0, 0], (4, true)), Ok(10));
    let mut pair = (1, 2);
    assert_eq!(by_mut_ref(&mut pair), Ok(5));
    assert_eq!(pair, (2, 3));
}
