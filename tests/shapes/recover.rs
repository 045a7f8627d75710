//! `#[recover]` fallbacks: generic (turbofish), imported with `use` and `use … as`, methods,
//! in a trait impl, and run inside the call's context.

use std::sync::Mutex;

use reattempt::{IdempotencyKey, recover, retryable};

use crate::{Fail, assert_send};

mod fallbacks {
    use reattempt::recover;

    use crate::Fail;

    #[recover]
    pub async fn zero(_: Fail) -> Result<u32, Fail> {
        Ok(0)
    }

    #[recover]
    pub fn with_args(_: Fail, n: u32) -> Result<u32, Fail> {
        Ok(n + 100)
    }

    #[recover]
    pub async fn default_of<T: Default>(_: Fail) -> Result<T, Fail> {
        Ok(T::default())
    }
}

use fallbacks::with_args as plus_hundred;
use fallbacks::zero;

// S49: a generic recover fn named with a turbofish.
#[retryable(max_attempts = 2, delay = "1ms", recover = fallbacks::default_of::<u32>)]
async fn turbofish() -> Result<u32, Fail> {
    Err(Fail)
}

// S50: a recover fn imported with `use`.
#[retryable(max_attempts = 2, delay = "1ms", recover = zero)]
async fn imported() -> Result<u32, Fail> {
    Err(Fail)
}

// S51: a recover fn imported with `use … as`, taking the arguments; blocking.
#[retryable(max_attempts = 2, delay = "1ms", recover = plus_hundred)]
fn imported_as(n: u32) -> Result<u32, Fail> {
    let _ = n;
    Err(Fail)
}

static KEYS: Mutex<Vec<IdempotencyKey>> = Mutex::new(Vec::new());

fn key() -> IdempotencyKey {
    reattempt::context()
        .expect("inside the call")
        .idempotency_key()
}

#[derive(Debug, Default)]
pub struct Payments {
    pending: Vec<(String, IdempotencyKey, u32)>,
}

impl Payments {
    // S52: a recover method with the arguments, reading the call's context (finding 10.9).
    #[retryable(max_attempts = 3, delay = "1ms", recover = Self::mark_pending)]
    async fn charge(&mut self, order: &str) -> Result<u32, Fail> {
        KEYS.lock().expect("lock").push(key());
        let _ = order;
        Err(Fail)
    }

    #[recover]
    async fn mark_pending(&mut self, _: Fail, order: &str) -> Result<u32, Fail> {
        let ctx = reattempt::context().expect("recover runs in the call's context");
        self.pending
            .push((order.to_owned(), ctx.idempotency_key(), ctx.attempt()));
        Ok(0)
    }

    // S53: a blocking recover method, in the call's context.
    #[retryable(max_attempts = 2, delay = "1ms", recover = Self::blocking_pending)]
    fn charge_blocking(&mut self) -> Result<u32, Fail> {
        KEYS.lock().expect("lock").push(key());
        Err(Fail)
    }

    #[recover]
    fn blocking_pending(&mut self, _: Fail) -> Result<u32, Fail> {
        self.pending.push((String::new(), key(), 0));
        Ok(1)
    }
}

trait Charge {
    async fn charge_twice(&self) -> Result<u32, Fail>;
}

struct Gateway;

impl Gateway {
    #[recover]
    async fn refused(&self, _: Fail) -> Result<u32, Fail> {
        Ok(7)
    }
}

// S54: `recover` on a method of a trait impl.
impl Charge for Gateway {
    #[retryable(max_attempts = 2, delay = "1ms", recover = Self::refused)]
    async fn charge_twice(&self) -> Result<u32, Fail> {
        Err(Fail)
    }
}

#[tokio::test(start_paused = true)]
async fn recover_shapes() {
    assert_eq!(assert_send(turbofish()).await, Ok(0));
    assert_eq!(assert_send(imported()).await, Ok(0));
    assert_eq!(imported_as(1), Ok(101));
    assert_eq!(assert_send(Gateway.charge_twice()).await, Ok(7));

    let mut payments = Payments::default();
    assert_eq!(assert_send(payments.charge("o-1")).await, Ok(0));
    let keys = std::mem::take(&mut *KEYS.lock().expect("lock"));
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| *k == keys[0]));
    assert_eq!(payments.pending, [("o-1".to_owned(), keys[0], 3)]);

    assert_eq!(payments.charge_blocking(), Ok(1));
    let keys = std::mem::take(&mut *KEYS.lock().expect("lock"));
    assert_eq!(payments.pending[1].1, keys[0]);
}
