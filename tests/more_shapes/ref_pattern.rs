//! Review 3: `retry_on = [&E::Busy]` compiled before m3 (matched against `&E`); the rewrite to
//! `&(pattern)` makes it `&&E::Busy`. Does not compile (E0308).

use std::cell::Cell;

use reattempt::retryable;

#[derive(Debug, Clone, PartialEq, Eq)]
enum E {
    Busy,
    Declined,
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [&E::Busy])]
fn explicit_reference(n: &Cell<u32>, e: &E) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(e.clone())
}

#[test]
fn an_explicit_reference_pattern_compares() {
    let n = Cell::new(0);
    let _ = explicit_reference(&n, &E::Busy);
    assert_eq!(n.get(), 3);
    n.set(0);
    let _ = explicit_reference(&n, &E::Declined);
    assert_eq!(n.get(), 1);
}
