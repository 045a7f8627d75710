//! Review 3 batch 3 (scratch).

#![allow(dead_code)]

use std::fmt;
use std::sync::{Arc, LazyLock};

use reattempt::{BreakerOpen, CircuitBreaker, RetryBudget, retryable};

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

// async_trait with by-value receivers
#[async_trait::async_trait]
trait Api {
    async fn by_value(self) -> Result<u32, Fail>;
    async fn by_arc(self: Arc<Self>) -> Result<u32, Fail>;
    async fn by_mut(&mut self, n: u32) -> Result<u32, Fail>;
}

#[derive(Clone)]
struct A {
    n: u32,
}

#[async_trait::async_trait]
impl Api for A {
    #[retryable(max_attempts = 2, delay = "1ms")]
    async fn by_value(self) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.n)
    }

    #[retryable(max_attempts = 2, delay = "1ms", circuit_breaker = BREAKER)]
    async fn by_arc(self: Arc<Self>) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.n)
    }

    #[retryable(max_attempts = 2, delay = "1ms", budget = BUDGET)]
    async fn by_mut(&mut self, n: u32) -> Result<u32, Fail> {
        self.n += n;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.n)
    }
}

// format strings
struct Show(u32);

impl fmt::Display for Show {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "show{}", self.0)
    }
}

impl Show {
    #[retryable(max_attempts = 2, delay = "1ms")]
    fn text(&mut self) -> Result<String, Fail> {
        self.0 += 1;
        assert!(self.0 > 0, "{self}");
        let raw = format!(r"{self}");
        let mut out = String::new();
        fmt::Write::write_fmt(&mut out, format_args!("{self}|")).map_err(|_| Fail)?;
        if first_try() {
            return Err(Fail);
        }
        Ok(format!("{out}{raw}{self:>7}"))
    }
}

// cfg args
#[retryable(max_attempts = 2, delay = "1ms")]
fn cfg_args(
    #[cfg(not(test))] gone: String,
    #[cfg(test)] kept: String,
    #[cfg_attr(test, allow(unused_variables))] quiet: String,
) -> Result<usize, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(kept.len())
}

// slice patterns on a borrowed-slice error
#[retryable(max_attempts = 3, delay = "1ms", retry_on = [[1, ..], [_, rest @ .., 9]])]
fn slices(e: &'static [u8]) -> Result<u32, &'static [u8]> {
    Err(e)
}

#[tokio::test(start_paused = true)]
async fn run_all() {
    assert_eq!(A { n: 1 }.by_value().await, Ok(1));
    assert_eq!(Arc::new(A { n: 2 }).by_arc().await, Ok(2));
    let mut a = A { n: 0 };
    assert_eq!(a.by_mut(1).await, Ok(2));
    let mut s = Show(0);
    assert_eq!(s.text(), Ok("show2|show2show2".to_owned()));
    assert_eq!(cfg_args("ab".into(), "c".into()), Ok(2));
}
