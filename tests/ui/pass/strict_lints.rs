#![deny(warnings)]
#![forbid(
    clippy::pedantic,
    unreachable_code,
    dead_code,
    unused_variables,
    unused_mut,
    unused_braces
)]
//! Crate-level `forbid` of the lints an expansion could trip: the expansion needs no `#[allow]`
//! of them (an `allow` under `forbid` is error E0453; of a lint of a forbidden group, such as
//! `clippy::needless_pass_by_value` under `clippy::pedantic`, `forbidden_lint_groups`). Several
//! shapes of `tests/shapes/`, here in a crate of their own, with by-value arguments and a
//! binding in a `retry_on` pattern.

use reattempt::{recover, retryable};

#[derive(Debug, PartialEq)]
struct Fail;

#[derive(Debug, PartialEq)]
enum Http {
    Status(u16),
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [Http::Status(code @ 500..=599)])]
async fn bound(s: String) -> Result<usize, Http> {
    if first_try() {
        return Err(Http::Status(503));
    }
    Ok(s.len())
}

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

struct Client {
    calls: u32,
}

impl Client {
    #[retryable(max_attempts = 3, delay = "1ms", recover = Self::fallback)]
    async fn call(&mut self, mut input: &[u8], mut n: u32) -> Result<usize, Fail> {
        self.calls += 1;
        input = &input[1..];
        n += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(input.len() + usize::try_from(n).unwrap_or(0))
    }

    #[recover]
    async fn fallback(&mut self, _: Fail) -> Result<usize, Fail> {
        Ok(0)
    }
}

#[retryable(max_attempts = 3, delay = "1ms")]
async fn impl_return(_unused: String) -> Result<impl std::fmt::Display, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(1)
}

#[retryable(max_attempts = 3, delay = "1ms")]
fn blocking((a, b): (u8, u8)) -> Result<u8, Fail> {
    if first_try() { Err(Fail) } else { Ok(a + b) }
}

static BUDGET: std::sync::LazyLock<reattempt::RetryBudget> =
    std::sync::LazyLock::new(|| reattempt::RetryBudget::builder().build().unwrap_or_else(|_| unreachable!()));

// A `Transient` error under a budget (asked whether it timed out), and `log_error`.
#[retryable(max_attempts = 3, delay = "1ms", budget = BUDGET, log_error = "debug")]
async fn read(n: u8) -> std::io::Result<u8> {
    if first_try() {
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    Ok(n)
}

// A non-`Transient` error under a budget: not asked.
#[retryable(max_attempts = 3, delay = "1ms", budget = BUDGET)]
async fn plain(n: u8) -> Result<u8, Fail> {
    if first_try() { Err(Fail) } else { Ok(n) }
}

// `mut self` by value: copied per attempt for a `Copy` type (the attempt's binding is `mut`),
// borrowed otherwise (where that `mut` is not needed, and must not warn).
#[derive(Clone, Copy)]
struct Id(u8);

impl Id {
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn bumped(mut self) -> Result<u8, Fail> {
        self.0 += 1;
        if first_try() { Err(Fail) } else { Ok(self.0) }
    }
}

impl Client {
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn owned(mut self) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() { Err(Fail) } else { Ok(self.calls) }
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(read(5).await.ok(), Some(5));
    assert_eq!(plain(6).await, Ok(6));
    let mut c = Client { calls: 0 };
    assert_eq!(c.call(&[1, 2, 3], 1).await, Ok(4));
    assert_eq!(c.calls, 2);
    assert_eq!(impl_return(String::new()).await.map(|d| d.to_string()), Ok("1".to_owned()));
    assert_eq!(blocking((1, 2)), Ok(3));
    assert_eq!(bound("ab".to_owned()).await, Ok(2));
    assert_eq!(Id(1).bumped(), Ok(2));
    assert_eq!(Client { calls: 0 }.owned(), Ok(2));
}
