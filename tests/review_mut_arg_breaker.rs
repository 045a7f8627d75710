//! Review (issue 11): `circuit_breaker` read from a `&mut` argument. The breaker is bound
//! once before the loop (a shared borrow of `*conn`), then each attempt reborrows `conn`
//! mutably: E0502, reported at the whole attribute. The `&mut self` case is special-cased
//! (`mentions_self`), a `&mut` argument is not.
#![allow(missing_docs)]
use reattempt::{BreakerOpen, CircuitBreaker, retryable};

#[derive(Debug, PartialEq)]
pub enum E {
    Busy,
    Open,
}
impl From<BreakerOpen> for E {
    fn from(_: BreakerOpen) -> Self {
        E::Open
    }
}

pub struct Conn {
    breaker: CircuitBreaker,
    sent: u32,
}

#[retryable(max_attempts = 3, delay = "1ms", circuit_breaker = conn.breaker)]
async fn send(conn: &mut Conn) -> Result<u32, E> {
    conn.sent += 1;
    if conn.sent < 2 {
        return Err(E::Busy);
    }
    Ok(conn.sent)
}

#[tokio::test(start_paused = true)]
async fn a_breaker_from_a_mut_argument() {
    let mut conn = Conn {
        breaker: CircuitBreaker::builder().build().expect("valid"),
        sent: 0,
    };
    assert_eq!(send(&mut conn).await, Ok(2));
}
