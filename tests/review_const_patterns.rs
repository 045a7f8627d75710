//! Review (issue 12): constants in `retry_on`. The lone-binding error says "for a constant,
//! name it by its path (`Self::TIMEOUT`)", and `catch_all` leaves upper-case names to the
//! compiler "which resolves them as variants or constants"; but the patterns are matched
//! against `&E` (`matches!(__reattempt_error, PAT)`), and a constant pattern gets no default
//! binding mode: E0308 "expected `&E`, found `E`", with a suggestion to write `&*` before
//! `#[retryable(...)]`.
#![allow(missing_docs)]
use std::cell::Cell;

use reattempt::retryable;

#[derive(Debug, PartialEq, Eq, Clone)]
pub enum E {
    Busy,
    Declined,
}

pub const BUSY: E = E::Busy;

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [BUSY])]
fn free_const(n: &Cell<u32>) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(E::Declined)
}

pub struct S;
impl S {
    const BUSY: E = E::Busy;

    #[retryable(max_attempts = 3, delay = "1ms", retry_on = [Self::BUSY])]
    fn assoc_const(n: &Cell<u32>) -> Result<u32, E> {
        n.set(n.get() + 1);
        Err(E::Declined)
    }
}

#[test]
fn constants_compare() {
    let n = Cell::new(0);
    assert_eq!(free_const(&n), Err(E::Declined));
    assert_eq!(n.replace(0), 1);
    assert_eq!(S::assoc_const(&n), Err(E::Declined));
    assert_eq!(n.get(), 1);
}
