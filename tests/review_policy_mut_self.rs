//! Review (issue 11): `policy = self.policy` in a `&mut self` method. `Call::new(&self.policy)`
//! borrows `self` for the whole call while each attempt reborrows it mutably: E0502 at the
//! whole attribute. `circuit_breaker`/`budget` from `self` are special-cased for `&mut self`,
//! `policy` is not (and the key's own message suggests `self.policy`).
#![allow(missing_docs)]
use std::time::Duration;

use reattempt::{Elapsed, RetryPolicy, retryable};

#[derive(Debug, PartialEq)]
pub enum E {
    Busy,
    TimedOut,
}
impl From<Elapsed> for E {
    fn from(_: Elapsed) -> Self {
        E::TimedOut
    }
}

pub struct Svc {
    policy: RetryPolicy,
    calls: u32,
}

impl Svc {
    #[retryable(policy = self.policy)]
    async fn call(&mut self) -> Result<u32, E> {
        self.calls += 1;
        if self.calls < 2 {
            return Err(E::Busy);
        }
        Ok(self.calls)
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_field_of_a_mut_self_method() {
    let mut s = Svc {
        policy: RetryPolicy::builder()
            .max_attempts(3)
            .delay(Duration::from_millis(1))
            .build()
            .expect("valid"),
        calls: 0,
    };
    assert_eq!(s.call().await, Ok(2));
}
