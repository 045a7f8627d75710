//! Review 3: user-like shapes against the m1–m3 macro changes.

#![allow(dead_code)]

use std::cell::Cell;
use std::sync::LazyLock;

use reattempt::{RetryBudget, retryable};

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

static BUDGET: LazyLock<RetryBudget> =
    LazyLock::new(|| RetryBudget::builder().build().expect("budget"));

// --- receivers: a body that only reads `self` by value
#[derive(Clone, Debug)]
struct Client {
    base: String,
}

impl Client {
    #[retryable(max_attempts = 2, delay = "1ms")]
    fn by_value(self) -> Result<usize, String> {
        if first_try() {
            return Err("x".into());
        }
        Ok(self.base.len())
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn by_value_async(self) -> Result<usize, String> {
        if first_try() {
            return Err("x".into());
        }
        Ok(self.base.len())
    }
}

// --- error &'static str, budget (timeout probe on non-Transient)
#[retryable(max_attempts = 2, delay = "1ms", budget = BUDGET)]
fn static_str_err() -> Result<u32, &'static str> {
    if first_try() {
        return Err("busy");
    }
    Ok(1)
}

// --- retry_on a string literal on &'static str
#[retryable(max_attempts = 3, delay = "1ms", retry_on = ["busy"])]
fn str_lit(n: &Cell<u32>) -> Result<u32, &'static str> {
    n.set(n.get() + 1);
    Err("busy")
}

// --- Box<dyn Error + Send + Sync> with budget, async
#[retryable(max_attempts = 2, delay = "1ms", budget = BUDGET)]
async fn boxed_err() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    if first_try() {
        return Err("x".into());
    }
    Ok(1)
}

// --- patterns
#[derive(Debug, Clone, PartialEq, Eq)]
enum E {
    Busy,
    Http(u16),
    Io(std::io::ErrorKind),
    Pair(u8, u8),
    Named { code: u16, retry: bool },
    Many(Vec<u8>),
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [E::Http(500..=599), E::Io(ref _k), E::Pair(1 | 2, x) | E::Named { code: 503, ref retry }])]
fn pats(n: &Cell<u32>, e: &E) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(e.clone())
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [E::Http(0..=0)])]
fn neg(n: &Cell<u32>, e: &E) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(e.clone())
}

// generic enum
#[derive(Debug, Clone)]
enum G<T> {
    Retry(T),
    Stop,
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [G::Retry(_)])]
fn generic_enum<T: Clone + std::fmt::Debug>(n: &Cell<u32>, e: &G<T>) -> Result<u32, G<T>> {
    n.set(n.get() + 1);
    Err(e.clone())
}

// reference pattern (as before: matched against `&E`?)
#[retryable(max_attempts = 3, delay = "1ms", retry_on = [E::Busy])]
fn ref_pat(n: &Cell<u32>, e: &E) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(e.clone())
}

#[test]
fn run_all() {
    let c = Client { base: "abc".into() };
    assert_eq!(c.clone().by_value(), Ok(3));
    assert_eq!(static_str_err(), Ok(1));
    let n = Cell::new(0);
    let _ = str_lit(&n);
    assert_eq!(n.get(), 3);
}
