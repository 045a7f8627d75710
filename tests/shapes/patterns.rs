//! `retry_on`/`no_retry_on` patterns: constants, paths, and bindings (which only compare).

use std::cell::Cell;

use reattempt::retryable;

#[derive(Debug, PartialEq, Eq, Clone)]
pub enum E {
    Busy,
    Declined,
    Http(u16),
}

pub const BUSY: E = E::Busy;

// S76: a constant in `retry_on`, by name and by `Self::` path; and a binding (`code @ …`), which
// is dropped (the pattern only compares).
#[retryable(max_attempts = 3, delay = "1ms", retry_on = [BUSY])]
fn free_const(n: &Cell<u32>, e: &E) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(e.clone())
}

pub struct S;

impl S {
    const BUSY: E = E::Busy;

    #[retryable(max_attempts = 3, delay = "1ms", retry_on = [Self::BUSY], no_retry_on = [E::Http(code @ 501)])]
    fn assoc_const(n: &Cell<u32>, e: &E) -> Result<u32, E> {
        n.set(n.get() + 1);
        Err(e.clone())
    }

    #[retryable(max_attempts = 3, delay = "1ms", retry_on = [E::Http(code @ 500..=599) | Self::BUSY])]
    fn bound(n: &Cell<u32>, e: &E) -> Result<u32, E> {
        n.set(n.get() + 1);
        Err(e.clone())
    }
}

#[test]
fn constants_compare_and_bindings_do_not_catch_all() {
    let n = Cell::new(0);
    let attempts = |f: fn(&Cell<u32>, &E) -> Result<u32, E>, e: E| {
        n.set(0);
        let _ = f(&n, &e);
        n.get()
    };
    assert_eq!(attempts(free_const, E::Declined), 1);
    assert_eq!(attempts(free_const, E::Busy), 3);
    assert_eq!(attempts(S::assoc_const, E::Declined), 1);
    assert_eq!(attempts(S::assoc_const, E::Busy), 3);
    assert_eq!(attempts(S::bound, E::Http(503)), 3);
    assert_eq!(attempts(S::bound, E::Http(404)), 1);
    assert_eq!(attempts(S::bound, E::Busy), 3);
}
