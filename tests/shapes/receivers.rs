//! Receivers: `&self`, `&mut self`, `self`, `mut self`, typed receivers, associated fns.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use reattempt::retryable;

use crate::{Fail, assert_send, attempt, first_try};

#[derive(Debug, Clone, Default)]
pub struct Client {
    calls: u32,
    name: String,
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.name)
    }
}

fn helper() -> u32 {
    7
}

impl Client {
    // S1: `&self`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn shared(&self) -> Result<usize, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.name.len())
    }

    // S2: `&mut self`, state kept across attempts (the receiver is the caller's).
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn unique(&mut self) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.calls)
    }

    // S3: `&mut self` moved into an `async move` block inside the body.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn unique_async_move(&mut self) -> Result<u32, Fail> {
        let fut = async move {
            self.calls += 1;
            self.calls
        };
        let n = fut.await;
        if first_try() {
            return Err(Fail);
        }
        Ok(n)
    }

    // S4: `self` by value (borrowed by each attempt, never moved out).
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn owned(self) -> Result<String, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.name.clone())
    }

    // S5: `mut self` by value.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn owned_mut(mut self) -> Result<u32, Fail> {
        self.calls += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.calls)
    }

    // S6: `self: Arc<Self>`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn arc(self: Arc<Self>) -> Result<usize, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.name.len() + Arc::strong_count(&self))
    }

    // S7: `self: Box<Self>`, blocking.
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn boxed(self: Box<Self>) -> Result<usize, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.name.len())
    }

    // S8: `self: &Self` written out.
    #[allow(clippy::needless_arbitrary_self_type)]
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn typed_ref(self: &Self) -> Result<usize, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(self.name.len())
    }

    // S9: macros mentioning `self`, a format string capturing `self`, and a `self::` path.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn macros(&mut self) -> Result<String, Fail> {
        self.calls += 1;
        let a = format!("{}/{}", self.name, self.calls);
        let b = format!("{self}");
        assert!(self.calls > 0, "{}", self.name);
        if first_try() {
            return Err(Fail);
        }
        Ok(format!("{a} {b} {}", self::helper()))
    }

    // S10: an associated fn without receiver, returning `Self`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn connect(name: &str) -> Result<Self, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(Client {
            calls: 0,
            name: name.to_owned(),
        })
    }

    // S11: a nested item with its own `self` inside a method's body.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn nested_item(&self) -> Result<u32, Fail> {
        struct Local(u32);
        impl Local {
            fn get(&self) -> u32 {
                self.0
            }
        }
        if first_try() {
            return Err(Fail);
        }
        Ok(Local(u32::try_from(self.name.len()).unwrap_or(0)).get())
    }

    // S12: blocking `&mut self`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn blocking_unique(&mut self, step: u32) -> Result<u32, Fail> {
        self.calls += step;
        if first_try() {
            return Err(Fail);
        }
        Ok(self.calls)
    }
}

trait Api {
    async fn get(&self, id: u32) -> Result<u32, Fail>;
}

// S13: an `async fn` in a trait impl.
impl Api for Client {
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn get(&self, id: u32) -> Result<u32, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(id + attempt())
    }
}

#[tokio::test(start_paused = true)]
async fn receivers() {
    let mut c = Client {
        calls: 0,
        name: "api".to_owned(),
    };
    assert_eq!(assert_send(c.shared()).await, Ok(3));
    assert_eq!(assert_send(c.unique()).await, Ok(2));
    assert_eq!(assert_send(c.unique_async_move()).await, Ok(4));
    assert_eq!(assert_send(c.clone().owned()).await, Ok("api".to_owned()));
    // Both attempts mutate the one `self` the call owns.
    assert_eq!(assert_send(c.clone().owned_mut()).await, Ok(6));
    assert_eq!(assert_send(Arc::new(c.clone()).arc()).await, Ok(4));
    assert_eq!(Box::new(c.clone()).boxed(), Ok(3));
    assert_eq!(assert_send(c.typed_ref()).await, Ok(3));
    assert_eq!(
        assert_send(c.macros()).await,
        Ok("api/6 client api 7".to_owned())
    );
    assert_eq!(
        assert_send(Client::connect("x")).await.map(|c| c.name),
        Ok("x".to_owned())
    );
    assert_eq!(assert_send(c.nested_item()).await, Ok(3));
    assert_eq!(c.blocking_unique(2), Ok(10));
    assert_eq!(assert_send(c.get(40)).await, Ok(42));
}

pub struct Pinned {
    n: u32,
}

impl Pinned {
    // S70: `self: Pin<&mut Self>` (not `mut`), taken by value in the body (`get_mut`): each
    // attempt gets `self.as_mut()`.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn bump(self: Pin<&mut Self>) -> Result<u32, Fail> {
        let this = self.get_mut();
        this.n += 1;
        if first_try() {
            return Err(Fail);
        }
        Ok(this.n)
    }
}

pub struct Templates {
    name: &'static str,
}

impl Templates {
    // S71: string literals that are not format strings, in macros, keep `{self}` as written
    // (only a formatting macro's format string captures the receiver).
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn list(&self) -> Result<Vec<&'static str>, Fail> {
        let v = vec![self.name, "Hello {self}", "{self:?}"];
        if first_try() { Err(Fail) } else { Ok(v) }
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn argument(&self) -> Result<String, Fail> {
        let s = format!("{} {} {self}", self.name, "{self}");
        if first_try() { Err(Fail) } else { Ok(s) }
    }
}

impl fmt::Display for Templates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[derive(Debug, PartialEq)]
pub enum PolicyError {
    Busy,
    TimedOut,
}

impl From<reattempt::Elapsed> for PolicyError {
    fn from(_: reattempt::Elapsed) -> Self {
        PolicyError::TimedOut
    }
}

pub struct Svc {
    policy: reattempt::RetryPolicy,
    calls: u32,
}

impl Svc {
    // S75: `policy = self.policy` in a `&mut self` method (copied once per call, as the
    // attempts reborrow `self` mutably).
    #[retryable(policy = self.policy)]
    async fn call(&mut self) -> Result<u32, PolicyError> {
        self.calls += 1;
        if self.calls < 2 {
            return Err(PolicyError::Busy);
        }
        Ok(self.calls)
    }
}

#[tokio::test(start_paused = true)]
async fn pinned_templates_and_policy_fields() {
    let mut p = Pinned { n: 0 };
    assert_eq!(assert_send(Pin::new(&mut p).bump()).await, Ok(2));
    let t = Templates { name: "t" };
    assert_eq!(t.list(), Ok(vec!["t", "Hello {self}", "{self:?}"]));
    assert_eq!(t.argument(), Ok("t {self} t".to_owned()));
    let mut s = Svc {
        policy: reattempt::RetryPolicy::builder()
            .max_attempts(3)
            .delay(std::time::Duration::from_millis(1))
            .build()
            .expect("valid"),
        calls: 0,
    };
    assert_eq!(assert_send(s.call()).await, Ok(2));
}
