//! Review 3 batch 2 (scratch).

#![allow(dead_code)]

use std::fmt::Debug;
use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use reattempt::{BreakerOpen, CircuitBreaker, RetryBudget, recover, retryable};

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

static BUDGET: LazyLock<RetryBudget> =
    LazyLock::new(|| RetryBudget::builder().build().expect("budget"));
static BREAKER: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::builder().build().expect("breaker"));

#[derive(Debug, Clone, PartialEq, Eq)]
struct Fail;

impl From<BreakerOpen> for Fail {
    fn from(_: BreakerOpen) -> Self {
        Fail
    }
}

// recover: generic retryable fn, generic fallback without turbofish
#[recover]
fn default_of<T: Default>(_: Fail) -> Result<T, Fail> {
    Ok(T::default())
}

#[retryable(max_attempts = 2, delay = "1ms", recover = default_of)]
fn parse_generic<T: FromStr + Default>(s: &str) -> Result<T, Fail> {
    s.parse().map_err(|_| Fail)
}

// recover: impl Trait argument, fallback with the arguments
#[recover]
fn len_fallback(_: Fail, s: impl AsRef<str>) -> Result<usize, Fail> {
    Ok(s.as_ref().len())
}

#[retryable(max_attempts = 2, delay = "1ms", recover = len_fallback)]
fn impl_arg(s: impl AsRef<str> + Clone) -> Result<usize, Fail> {
    let _ = s.as_ref();
    Err(Fail)
}

// recover: lifetimes
struct Store {
    items: Vec<String>,
}

impl Store {
    #[retryable(max_attempts = 2, delay = "1ms", recover = Self::first)]
    fn find<'a>(&'a self, key: &'a str) -> Result<&'a str, Fail> {
        self.items
            .iter()
            .find(|s| *s == key)
            .map(String::as_str)
            .ok_or(Fail)
    }

    #[recover]
    fn first<'a>(&'a self, _: Fail, key: &'a str) -> Result<&'a str, Fail> {
        Ok(self.items.first().map_or(key, String::as_str))
    }

    #[retryable(max_attempts = 2, delay = "1ms", recover = Self::first_async)]
    async fn find_async<'a>(&'a self, key: &'a str) -> Result<&'a str, Fail> {
        self.items
            .iter()
            .find(|s| *s == key)
            .map(String::as_str)
            .ok_or(Fail)
    }

    #[recover]
    async fn first_async<'a>(&'a self, _: Fail, key: &'a str) -> Result<&'a str, Fail> {
        Ok(self.items.first().map_or(key, String::as_str))
    }

    #[retryable(max_attempts = 2, delay = "1ms", recover = Self::elided)]
    fn find_elided(&self, key: &str) -> Result<String, Fail> {
        self.items.iter().find(|s| *s == key).cloned().ok_or(Fail)
    }

    #[recover]
    fn elided(&self, _: Fail, key: &str) -> Result<String, Fail> {
        Ok(format!("{key}{}", self.items.len()))
    }
}

// generic impl, generic recover method
struct Repo<T>(Vec<T>);

impl<T: Clone + Default + Send + Sync> Repo<T> {
    #[retryable(max_attempts = 2, delay = "1ms", recover = Self::fallback)]
    async fn get(&self, i: usize) -> Result<T, Fail> {
        self.0.get(i).cloned().ok_or(Fail)
    }

    #[recover]
    async fn fallback(&self, _: Fail) -> Result<T, Fail> {
        Ok(T::default())
    }
}

// timeout probe: generic E with where clause, breaker
#[retryable(max_attempts = 2, delay = "1ms", circuit_breaker = BREAKER)]
async fn generic_breaker<E>(e: E) -> Result<u32, E>
where
    E: reattempt::Transient + From<BreakerOpen> + Clone + Debug + Send,
{
    if first_try() {
        return Err(e);
    }
    Ok(1)
}

// Box<dyn Error> with budget, blocking
#[retryable(max_attempts = 2, delay = "1ms", budget = BUDGET)]
fn boxed_blocking() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    if first_try() {
        return Err("x".into());
    }
    Ok(1)
}

// async_trait with budget + breaker on a non-Transient error
#[async_trait::async_trait]
trait Api {
    async fn get(&self, id: u32) -> Result<u32, Fail>;
}

struct A;

#[async_trait::async_trait]
impl Api for A {
    #[retryable(max_attempts = 2, delay = "1ms", budget = BUDGET, circuit_breaker = BREAKER)]
    async fn get(&self, id: u32) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(id)
    }
}

// by-value receivers that only read
#[derive(Clone)]
struct Svc {
    n: u32,
}

impl Svc {
    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn arc(self: Arc<Self>) -> Result<u32, Fail> {
        let again = Arc::clone(&self);
        if first_try() {
            return Err(Fail);
        }
        Ok(self.n + again.n)
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn pinned(self: std::pin::Pin<&mut Self>) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.n)
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    fn boxed(self: Box<Self>) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.n)
    }
}

// a body starting with an item (pedantic items_after_statements)
#[retryable(max_attempts = 2, delay = "1ms")]
fn item_first(n: u32) -> Result<String, Fail> {
    use std::fmt::Write as _;
    let mut s = String::new();
    write!(s, "{n}").map_err(|_| Fail)?;
    Ok(s)
}

// decimal and word durations
#[retryable(
    max_attempts = 2,
    delay = "1.5ms",
    max_delay = "1 day",
    log_error = "debug"
)]
fn durations() -> Result<u32, Fail> {
    Err(Fail)
}

// negative literal pattern on an i32 error
#[retryable(max_attempts = 3, delay = "1ms", retry_on = [-1, -5..=-3])]
fn neg_code(c: i32) -> Result<u32, i32> {
    Err(c)
}

#[tokio::test(start_paused = true)]
async fn run_all() {
    assert_eq!(parse_generic::<u32>("x"), Ok(0));
    assert_eq!(impl_arg("abc"), Ok(3));
    let s = Store {
        items: vec!["z".into()],
    };
    assert_eq!(s.find("q"), Ok("z"));
    assert_eq!(s.find_async("q").await, Ok("z"));
    assert_eq!(s.find_elided("q"), Ok("q1".to_owned()));
    assert_eq!(Repo::<u32>(vec![]).get(3).await, Ok(0));
    assert_eq!(A.get(7).await, Ok(7));
    let svc = Svc { n: 2 };
    assert_eq!(Arc::new(svc.clone()).arc().await, Ok(4));
    let mut p = svc.clone();
    assert_eq!(std::pin::Pin::new(&mut p).pinned().await, Ok(2));
    assert_eq!(Box::new(svc).boxed(), Ok(2));
    assert_eq!(item_first(5), Ok("5".into()));
    assert_eq!(boxed_blocking().ok(), Some(1));
}
