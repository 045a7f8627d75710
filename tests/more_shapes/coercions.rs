//! Issue 38: a function whose `Ok` is a borrow written through a coercion (`Ok(&self.s)` where
//! `s: String`, returned as `Result<&str, _>`): deref coercions (`&String` → `&str`, `&Vec<T>` →
//! `&[T]`, `&Box<T>` → `&T`, `&mut String` → `&mut str`) and an unsizing (`&u32` → `&dyn
//! Display`), in every shape that returns a borrow: `&mut self` lending its attempts (async,
//! blocking, timed), a lent `&'a mut` argument, `&self`, a shared argument, and a hedged call.
//! Each fails its first attempt, retries, and hands back the borrow.

use std::fmt::Display;
use std::sync::atomic::{AtomicU32, Ordering};

use reattempt::retryable;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail;

pub struct Store {
    s: String,
    v: Vec<u32>,
    b: Box<u32>,
    n: u32,
    attempts: AtomicU32,
}

impl Store {
    fn new() -> Self {
        Store {
            s: "text".to_owned(),
            v: vec![1, 2],
            b: Box::new(7),
            n: 9,
            attempts: AtomicU32::new(0),
        }
    }

    /// Counts an attempt; the first of each call fails.
    fn attempt(&self) -> Result<(), Fail> {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        if reattempt::context().is_some_and(|c| c.attempt() < 2) {
            Err(Fail)
        } else {
            Ok(())
        }
    }

    fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }

    // `&mut self`, async: the call lends its attempts `self`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn text_mut(&mut self) -> Result<&str, Fail> {
        self.attempt()?;
        Ok(&self.s)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn slice_mut(&mut self) -> Result<&[u32], Fail> {
        self.attempt()?;
        Ok(&self.v)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn boxed_mut(&mut self) -> Result<&u32, Fail> {
        self.attempt()?;
        Ok(&self.b)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn text_unique(&mut self) -> Result<&mut str, Fail> {
        self.attempt()?;
        Ok(&mut self.s)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn shown_mut(&mut self) -> Result<&dyn Display, Fail> {
        self.attempt()?;
        Ok(&self.n)
    }

    // The same, timed.
    #[retryable(max_attempts = 3, delay = "1ms", timeout = "1s", timeout_into = |_| Fail)]
    async fn text_mut_timed(&mut self) -> Result<&str, Fail> {
        self.attempt()?;
        Ok(&self.s)
    }

    // `&mut self`, blocking.
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn text_mut_blocking(&mut self) -> Result<&str, Fail> {
        self.attempt()?;
        Ok(&self.s)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn slice_mut_blocking(&mut self) -> Result<&[u32], Fail> {
        self.attempt()?;
        Ok(&self.v)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn text_unique_blocking(&mut self) -> Result<&mut str, Fail> {
        self.attempt()?;
        Ok(&mut self.s)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn shown_mut_blocking(&mut self) -> Result<&dyn Display, Fail> {
        self.attempt()?;
        Ok(&self.n)
    }

    // `&self`, async and blocking.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn text(&self) -> Result<&str, Fail> {
        self.attempt()?;
        Ok(&self.s)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn slice(&self) -> Result<&[u32], Fail> {
        self.attempt()?;
        Ok(&self.v)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn boxed(&self) -> Result<&u32, Fail> {
        self.attempt()?;
        Ok(&self.b)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn shown(&self) -> Result<&dyn Display, Fail> {
        self.attempt()?;
        Ok(&self.n)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn boxed_blocking(&self) -> Result<&u32, Fail> {
        self.attempt()?;
        Ok(&self.b)
    }

    // `&self`, hedged: attempts may overlap.
    #[retryable(max_attempts = 3, delay = "1ms", hedge_after = "1s", idempotent = true)]
    async fn text_hedged(&self) -> Result<&str, Fail> {
        self.attempt()?;
        Ok(&self.s)
    }
}

// A lent `&'a mut` argument.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn text_of<'a>(store: &'a mut Store) -> Result<&'a str, Fail> {
    store.attempt()?;
    Ok(&store.s)
}

#[retryable(max_attempts = 3, delay = "1ms")]
fn slice_of_blocking<'a>(store: &'a mut Store, _tag: &str) -> Result<&'a [u32], Fail> {
    store.attempt()?;
    Ok(&store.v)
}

// A shared argument.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn boxed_of(store: &Store) -> Result<&u32, Fail> {
    store.attempt()?;
    Ok(&store.b)
}

#[retryable(max_attempts = 3, delay = "1ms")]
fn shown_of_blocking(store: &Store) -> Result<&dyn Display, Fail> {
    store.attempt()?;
    Ok(&store.n)
}

fn assert_send<T: Send>(_: T) {}

#[test]
fn the_lent_futures_are_send() {
    let mut store = Store::new();
    assert_send(store.text_mut());
    let mut store = Store::new();
    assert_send(text_of(&mut store));
}

#[tokio::test(start_paused = true)]
async fn a_lent_call_retries_and_returns_the_coerced_borrow() {
    let mut store = Store::new();
    assert_eq!(store.text_mut().await, Ok("text"));
    assert_eq!(store.slice_mut().await, Ok(&[1, 2][..]));
    assert_eq!(store.boxed_mut().await, Ok(&7));
    store
        .text_unique()
        .await
        .expect("second attempt")
        .make_ascii_uppercase();
    assert_eq!(store.s, "TEXT");
    assert_eq!(
        store.shown_mut().await.map(ToString::to_string),
        Ok("9".to_owned())
    );
    assert_eq!(store.text_mut_timed().await, Ok("TEXT"));
    // Two attempts per call: the first failed, the second returned the borrow.
    assert_eq!(store.attempts(), 12);

    let mut store = Store::new();
    assert_eq!(store.text_mut_blocking(), Ok("text"));
    assert_eq!(store.slice_mut_blocking(), Ok(&[1, 2][..]));
    store
        .text_unique_blocking()
        .expect("second attempt")
        .make_ascii_uppercase();
    assert_eq!(
        store.shown_mut_blocking().map(ToString::to_string),
        Ok("9".to_owned())
    );
    assert_eq!((store.s.as_str(), store.attempts()), ("TEXT", 8));

    let mut store = Store::new();
    assert_eq!(text_of(&mut store).await, Ok("text"));
    assert_eq!(slice_of_blocking(&mut store, "t"), Ok(&[1, 2][..]));
    assert_eq!(store.attempts(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_shared_borrow_retries_and_returns_the_coerced_borrow() {
    let store = Store::new();
    assert_eq!(store.text().await, Ok("text"));
    assert_eq!(store.slice().await, Ok(&[1, 2][..]));
    assert_eq!(store.boxed().await, Ok(&7));
    assert_eq!(
        store.shown().await.map(ToString::to_string),
        Ok("9".to_owned())
    );
    assert_eq!(store.boxed_blocking(), Ok(&7));
    assert_eq!(boxed_of(&store).await, Ok(&7));
    assert_eq!(
        shown_of_blocking(&store).map(ToString::to_string),
        Ok("9".to_owned())
    );
    assert_eq!(store.attempts(), 14);
    // Hedged: the first attempt fails at once, so the second starts after the delay.
    assert_eq!(store.text_hedged().await, Ok("text"));
    assert_eq!(store.attempts(), 16);
}
