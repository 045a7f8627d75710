//! Review 3: a breaker expression naming `&mut self` is evaluated before and after each attempt,
//! so a body that replaces the breaker (a reconnect) has its permit recorded on another breaker.
#![deny(warnings, unused_mut, clippy::pedantic)]

use reattempt::{BreakerOpen, BreakerState, CircuitBreaker, retryable};

#[derive(Debug, PartialEq)]
enum Fail {
    Down,
    Open,
}

impl From<BreakerOpen> for Fail {
    fn from(_: BreakerOpen) -> Self {
        Fail::Open
    }
}

fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .expect("breaker")
}

struct Conn {
    breaker: CircuitBreaker,
    old: Option<CircuitBreaker>,
}

impl Conn {
    // The body reconnects: the connection, and its breaker, are new after the attempt.
    #[retryable(max_attempts = 1, circuit_breaker = self.breaker)]
    fn query(&mut self) -> Result<u32, Fail> {
        self.old = Some(std::mem::replace(&mut self.breaker, breaker()));
        Err(Fail::Down)
    }
}

#[test]
fn the_permit_is_recorded_on_the_breaker_that_gave_it() {
    let mut conn = Conn {
        breaker: breaker(),
        old: None,
    };
    assert_eq!(conn.query(), Err(Fail::Down));
    let old = conn.old.take().expect("replaced");
    // The attempt went through `old` (it gave the permit) and failed: `old` opens...
    assert_eq!(
        old.state(),
        BreakerState::Open,
        "the failure was not recorded on the breaker that admitted it"
    );
    // ...and the new breaker, which admitted nothing, stays closed.
    assert_eq!(conn.breaker.state(), BreakerState::Closed);
}
