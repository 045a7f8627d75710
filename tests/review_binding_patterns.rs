//! Review (issue 12, "patterns that bind instead of compare"): two lone bindings that
//! `catch_all` lets through. `&transient` (a reference pattern around a binding) is accepted
//! with no diagnostic at all; an upper-case name that resolves to nothing (`Unavailble`, a
//! typo, or a variant/constant not imported) is a binding too, with only a `non_snake_case`
//! warning that suggests snake-casing it. Both retry every error.
#![allow(missing_docs, non_snake_case)]
use std::cell::Cell;

use reattempt::retryable;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum E {
    Declined,
    Unavailable,
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [&transient])]
fn reference_binding(n: &Cell<u32>) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(E::Declined)
}

#[retryable(max_attempts = 3, delay = "1ms", retry_on = [Unavailble])]
fn typo(n: &Cell<u32>) -> Result<u32, E> {
    n.set(n.get() + 1);
    Err(E::Declined)
}

#[test]
fn a_declined_error_is_not_retried() {
    let n = Cell::new(0);
    let _ = reference_binding(&n);
    let by_reference = n.replace(0);
    let _ = typo(&n);
    let by_typo = n.replace(0);
    assert_eq!((by_reference, by_typo), (1, 1), "attempts made");
    let _ = E::Unavailable;
}
